package rtlocal

import "syscall"

// sysProcAttr puts RT's server in a process group of its own, which Stop
// ends as one, and kills the server with the process that started it,
// however that process ends (a test binary killed by its timeout
// included).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
