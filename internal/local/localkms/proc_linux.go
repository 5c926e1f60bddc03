package localkms

import (
	"os"
	"syscall"
)

// interrupt stops the server gracefully.
var interrupt os.Signal = syscall.SIGTERM

// sysProcAttr ends the server with the process that started it, however
// that process ends (a test binary killed by its timeout included).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
