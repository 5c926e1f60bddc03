package rtlocal

import "syscall"

// sysProcAttr makes RT's supervising shell (supervise) lead a process
// group of its own, which Stop ends as one, and has the kernel tell it to
// stop the group when the process that started it dies, however it dies
// (a test binary killed by its timeout included).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
