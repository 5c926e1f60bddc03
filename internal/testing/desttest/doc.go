// Package desttest runs a destination adapter against the local helpdesk
// over real HTTP on loopback, for every capability combination and every
// fault kind, and checks what each Create and Lookup reports against what
// the helpdesk really did: the evidence every adapter shares that a fault
// never makes a second ticket unnoticed.
package desttest
