package perf

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// Options selects and bounds the runs.
type Options struct {
	Out, Command, Only string
	// Update, with Only, replaces the sections of the parts run in the
	// report at Out (adding those it lacks) and keeps the rest of it as it
	// was, instead of writing a new report.
	Update bool

	FloorSamples int
	FloorBudget  time.Duration

	Clients  int
	Duration time.Duration

	HeapFirst, HeapSecond int

	ColdStarts int

	PeerSamples int
	PeerDir     string

	DeliverySamples int
	// RTSamples is how many tickets the Request Tracker run delivers
	// without a fault; RTLostSamples how many more with every first
	// create's answer lost.
	RTSamples, RTLostSamples int
	// DoorSamples is how many created calls the doors run sends through each door.
	DoorSamples int
	// ContentionDuration is each load run's length in the contention
	// part; Bursts how many times it sends the seed's burst.
	ContentionDuration time.Duration
	Bursts             int

	CapacitySamples int

	// FloodSamples is how many legitimate calls each flood scenario sends.
	FloodSamples int
}

func (o Options) wants(part string) bool {
	if o.Only == "" {
		return true
	}
	for _, p := range strings.Split(o.Only, ",") {
		if strings.TrimSpace(p) == part {
			return true
		}
	}
	return false
}

// part is one section of the report.
type part struct {
	name string
	run  func(ctx context.Context, o Options, w *strings.Builder) error
}

// Run runs the selected parts in order and writes the report. A part that
// fails is reported as failed, with its error, and the others still run;
// Run then returns an error naming the failed parts.
func Run(ctx context.Context, o Options) error {
	parts := []part{
		{"gobench", goBenchmarks},
		{"floor", floorPart},
		{"outcome", outcomePart},
		{"throughput", throughputPart},
		{"heap", heapPart},
		{"coldstart", coldStartPart},
		{"peer", peerPart},
		{"delivery", deliveryPart},
		{"rt", rtPart},
		{"capacity", capacityPart},
		{"doors", doorsPart},
		{"contention", contentionPart},
		{"flood", floodPart},
		{"edge", edgePart},
		{"backstop", backstopPart},
	}
	var doc strings.Builder
	started := time.Now().UTC()
	load0 := loadAverage()
	var failed []string
	var summary []string
	var body strings.Builder
	var sections []string
	for _, p := range parts {
		if !o.wants(p.name) {
			continue
		}
		fmt.Fprintf(os.Stderr, "oncecall-bench: %s...\n", p.name)
		t := time.Now()
		var w strings.Builder
		err := p.run(ctx, o, &w)
		if err != nil {
			failed = append(failed, p.name)
			fmt.Fprintf(&w, "\n**This run failed:** `%s`\n", oneLine(err.Error()))
			fmt.Fprintf(os.Stderr, "oncecall-bench: %s failed: %v\n", p.name, err)
		}
		fmt.Fprintf(&w, "\n_Run time: %s._\n\n", time.Since(t).Round(time.Second))
		if o.Update {
			sections = append(sections, updated(w.String(), o, started))
		}
		body.WriteString(w.String())
		summary = append(summary, summaryLines(w.String())...)
	}
	if o.Update {
		old, err := os.ReadFile(o.Out)
		if err != nil {
			return err
		}
		out := string(old)
		for _, sec := range sections {
			out = splice(out, sec)
		}
		out = retarget(out)
		if err := os.WriteFile(o.Out, []byte(out), 0o644); err != nil {
			return err
		}
		if len(failed) > 0 {
			return fmt.Errorf("failed: %s (see %s)", strings.Join(failed, ", "), o.Out)
		}
		return nil
	}
	fmt.Fprintf(&doc, "# oncecall benchmarks\n\n")
	fmt.Fprintf(&doc, "Written by `%s` (internal/bench/cmd/oncecall-bench) on %s; every figure below comes from that one run. "+
		"Timings are quoted as ratios against baselines measured in the same run, on loopback only.\n\n",
		o.Command, started.Format("2006-01-02 15:04 UTC"))
	doc.WriteString("## Machine\n\n")
	doc.WriteString(machine(load0))
	if len(summary) > 0 {
		doc.WriteString("\n## Targets\n\n| Target | Measured | Goal | Met |\n|---|---|---|---|\n")
		for _, l := range summary {
			doc.WriteString(l + "\n")
		}
	}
	doc.WriteString("\n")
	doc.WriteString(body.String())
	if len(failed) > 0 {
		fmt.Fprintf(&doc, "\n**Failed parts:** %s.\n", strings.Join(failed, ", "))
	}
	if err := os.WriteFile(o.Out, []byte(doc.String()), 0o644); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("failed: %s (see %s)", strings.Join(failed, ", "), o.Out)
	}
	return nil
}

// target formats a row of the targets table; parts write it into their
// section behind a marker so that Run can lift it into the summary.
func target(w *strings.Builder, name, measured, goal string, met bool) {
	m := "yes"
	if !met {
		m = "**no**"
	}
	fmt.Fprintf(w, "<!--target|%s|%s|%s|%s-->\n", name, measured, goal, m)
}

func summaryLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if rest, ok := strings.CutPrefix(l, "<!--target|"); ok {
			out = append(out, "| "+strings.ReplaceAll(strings.TrimSuffix(rest, "-->"), "|", " | ")+" |")
		}
	}
	return out
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 600 {
		s = s[:600] + "…"
	}
	return s
}

func machine(load0 string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- CPU: %s, %d cores (runtime.NumCPU)\n", cpuModel(), runtime.NumCPU())
	fmt.Fprintf(&b, "- Memory: %s\n", memTotal())
	fmt.Fprintf(&b, "- OS: %s/%s, kernel %s\n", runtime.GOOS, runtime.GOARCH, readTrim("/proc/sys/kernel/osrelease"))
	fmt.Fprintf(&b, "- Go: %s; Node: %s\n", runtime.Version(), nodeVersion())
	fmt.Fprintf(&b, "- Load average (1, 5, 15 min) at the start: %s; at the end: %s. The machine is shared with other work, which disturbs absolute timings; the ratios compare samples taken alternately or side by side in the same run.\n", load0, loadAverage())
	return b.String()
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

func cpuModel() string {
	for _, l := range strings.Split(readTrim("/proc/cpuinfo"), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func memTotal() string {
	for _, l := range strings.Split(readTrim("/proc/meminfo"), "\n") {
		if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func loadAverage() string {
	f := strings.Fields(readTrim("/proc/loadavg"))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], ", ")
}

// updated is a part's section sec with a line after its heading saying it
// comes from a later run than the rest of the report it is spliced into.
func updated(sec string, o Options, at time.Time) string {
	note := fmt.Sprintf("_This section was written by `%s` on %s, after the rest of this report: its figures come from that later run, not from the run named at the top._\n\n", o.Command, at.Format("2006-01-02 15:04 UTC"))
	heading, rest, ok := strings.Cut(sec, "\n\n")
	if !ok || !strings.HasPrefix(heading, "## ") {
		return note + sec
	}
	return heading + "\n\n" + note + rest
}

// splice replaces, in doc, the section with sec's heading (its first line
// that starts with "## ", up to the next such line or the failed-parts
// line), or, when doc has none, adds sec at the end, before the failed-parts
// line.
func splice(doc, sec string) string {
	heading := ""
	for _, l := range strings.Split(sec, "\n") {
		if strings.HasPrefix(l, "## ") {
			heading = l
			break
		}
	}
	end := func(from int) int {
		rest := doc[from:]
		j := len(rest)
		if k := strings.Index(rest, "\n## "); k >= 0 {
			j = k + 1
		}
		if k := strings.Index(rest, "\n**Failed parts:**"); k >= 0 && k+1 < j {
			j = k + 1
		}
		return from + j
	}
	if i := strings.Index(doc, "\n"+heading+"\n"); heading != "" && i >= 0 {
		start := i + 1
		return doc[:start] + sec + doc[end(start+len(heading)):]
	}
	at := len(doc)
	if k := strings.Index(doc, "\n**Failed parts:**"); k >= 0 {
		at = k + 1
	}
	if !strings.HasSuffix(doc[:at], "\n\n") {
		sec = "\n" + sec
	}
	return doc[:at] + sec + doc[at:]
}

// retarget rebuilds the targets table of doc (the rows under "## Targets")
// from the target markers of every section it holds, so that a section
// spliced in by -update is summarized with its own figures.
func retarget(doc string) string {
	const head = "\n## Targets\n\n| Target | Measured | Goal | Met |\n|---|---|---|---|\n"
	i := strings.Index(doc, head)
	if i < 0 {
		return doc
	}
	start := i + len(head)
	end := start
	for end < len(doc) && strings.HasPrefix(doc[end:], "| ") {
		nl := strings.IndexByte(doc[end:], '\n')
		if nl < 0 {
			end = len(doc)
			break
		}
		end += nl + 1
	}
	rows := summaryLines(doc[end:])
	return doc[:start] + strings.Join(rows, "\n") + "\n" + doc[end:]
}
