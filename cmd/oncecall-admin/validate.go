package main

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/ticket"
)

// Limits of what an operator types.
const (
	// maxTenantBytes bounds a tenant name.
	maxTenantBytes = 256
	// maxNameBytes bounds a user's display name.
	maxNameBytes = 256
	// opKeyLength is an operation key's length: a hex SHA-256
	// (idempotency.Derive).
	opKeyLength = 64
)

// checkText refuses an empty or oversized value, invalid UTF-8, control
// characters and surrounding spaces: in an id they are typing mistakes.
func checkText(flagName, v string, maxBytes int) error {
	switch {
	case v == "":
		return usageError("%s is required", flagName)
	case len(v) > maxBytes:
		return usageError("%s is longer than %d bytes", flagName, maxBytes)
	case !utf8.ValidString(v) || strings.IndexFunc(v, unicode.IsControl) >= 0:
		return usageError("%s %q has control characters or invalid UTF-8", flagName, v)
	case strings.TrimSpace(v) != v:
		return usageError("%s %q starts or ends with a space", flagName, v)
	}
	return nil
}

func checkUserID(v string) error { return checkText("-id", v, protocol.MaxUserIDBytes) }

func checkTenant(v string) error { return checkText("-tenant", v, maxTenantBytes) }

func checkName(v string) error {
	if v == "" {
		return nil
	}
	return checkText("-name", v, maxNameBytes)
}

// checkFunction refuses a function oncecall does not have.
func checkFunction(flagName, f string) error {
	for _, t := range callback.Tools {
		if t.Name() == f {
			return nil
		}
	}
	return usageError("%s %q is not one of oncecall's functions (%s)", flagName, f, functionNames())
}

func functionNames() string { return strings.Join(toolNames(), ", ") }

// toolNames names oncecall's tools, in their listing order.
func toolNames() []string {
	names := make([]string, len(callback.Tools))
	for i, t := range callback.Tools {
		names[i] = t.Name()
	}
	return names
}

// parseFunctions reads a comma-separated list of functions.
func parseFunctions(v string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		if err := checkFunction("-functions", f); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, usageError("-functions needs at least one function (%s); a user with none is a disabled user", functionNames())
	}
	return out, nil
}

func checkTicketID(v string) error {
	if !ticket.ValidID(v) {
		return usageError("-ticket %q is not a ticket id (a UUID such as 0f8e6c1a-3b2d-4c5e-9f70-1a2b3c4d5e6f)", v)
	}
	return nil
}

func checkOpKey(v string) error {
	if len(v) != opKeyLength || strings.Trim(v, "0123456789abcdef") != "" {
		return usageError("-op %q is not an operation key (%d lower-case hex digits, as the server logs it in op_key)", v, opKeyLength)
	}
	return nil
}

func checkRequestID(v string) error {
	if !protocol.ValidRequestID(v) {
		return usageError("-request %q is not a request id (1 to %d visible ASCII characters, no spaces)", v, protocol.MaxRequestIDBytes)
	}
	return nil
}

// versionFlag is an optional -version: the version the operator read.
type versionFlag struct {
	set bool
	v   int64
}

func (f *versionFlag) String() string {
	if !f.set {
		return ""
	}
	return strconv.FormatInt(f.v, 10)
}

func (f *versionFlag) Set(s string) error {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return usageError("-version %q is not a version (0 or more, as user get shows it)", s)
	}
	f.set, f.v = true, v
	return nil
}
