//go:build !linux

package localdb

import (
	"os"
	"syscall"
)

var interrupt os.Signal = os.Interrupt

func sysProcAttr() *syscall.SysProcAttr { return nil }
