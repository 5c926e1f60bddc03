// Package rtlocal runs Best Practical's Request Tracker 5, as Debian
// packages it, on a loopback port: a real helpdesk that nobody on this
// project wrote, for `make rt`, `make run DESTINATION=rt`, the RT
// adapter's tests and the load runs.
//
// `make rt-install` installs the packages once per machine. Each Start
// then runs a fresh RT of its own: a copy of a prepared SQLite database
// (built once per machine and kept in the user's cache folder: RT's
// schema, the queue's oncecall custom fields, an API token for root) and
// RT's own server (rt-server, Starlet) in a process group of its own,
// which Close stops. Instances never share tickets. The facts measured
// for RT on this kind of machine are in the shared notes on Request
// Tracker; what the adapter relies on is in internal/delivery/rt.
//
// Tests call Require first: without RT installed it fails the test when
// the environment variable CI is set (CI installs RT, so a missing one is
// a broken build, never a silent skip), and skips it otherwise, saying
// how to install RT.
package rtlocal
