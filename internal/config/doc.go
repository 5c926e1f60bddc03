// Package config reads oncecall's settings from the environment once, at
// start-up, and refuses to start on any missing or invalid one, naming the
// variable and what it accepts.
package config
