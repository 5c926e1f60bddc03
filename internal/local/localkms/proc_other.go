//go:build !linux

package localkms

import (
	"os"
	"syscall"
)

var interrupt os.Signal = os.Interrupt

func sysProcAttr() *syscall.SysProcAttr { return nil }
