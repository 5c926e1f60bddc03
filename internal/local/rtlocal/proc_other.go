//go:build !linux

package rtlocal

import "syscall"

// sysProcAttr makes RT's supervising shell (supervise) lead a process
// group of its own, which Stop ends as one.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
