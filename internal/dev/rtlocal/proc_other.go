//go:build !linux

package rtlocal

import "syscall"

// sysProcAttr puts RT's server in a process group of its own, which Stop
// ends as one.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
