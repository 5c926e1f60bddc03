package localdb

import (
	"os"
	"syscall"
)

// interrupt stops the store gracefully.
var interrupt os.Signal = syscall.SIGTERM

// sysProcAttr ends the store with the process that started it, however
// that process ends (a test binary killed by its timeout included).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
