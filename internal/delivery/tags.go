package delivery

import (
	"slices"
	"strings"

	"github.com/oncecall/oncecall/internal/ticket"
)

// ModelTagPrefix starts every tag a destination receives from a ticket's
// tags. The model writes those tags; a helpdesk's triggers, views and SLAs
// key on tags, so a model's tag must never be mistaken for one a person or
// an integration set ("vip", "escalated", "oncecall").
const ModelTagPrefix = "model_"

// ModelTag is tag as a destination receives it: ModelTagPrefix, then the
// tag in lower case with every character other than a-z, 0-9, "-" and "_"
// replaced by "_", so that a helpdesk that splits tags on spaces or
// commas (Zendesk does) cannot read one tag as several.
func ModelTag(tag string) string {
	var b strings.Builder
	b.Grow(len(ModelTagPrefix) + len(tag))
	b.WriteString(ModelTagPrefix)
	for _, r := range strings.ToLower(tag) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// ModelTags is ModelTag of each of tags, in order, without repeats; never
// nil.
func ModelTags(tags []string) []string {
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		m := ModelTag(t)
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// Priority is priority as a destination receives it: one of
// ticket.Priorities, exactly as written there, else ticket.DefaultPriority.
// create_ticket's schema refuses any other value, so this only matters for
// a ticket item written some other way; a helpdesk's triggers and SLAs key
// on priority, and nothing but those four words may reach them.
func Priority(priority string) string {
	if slices.Contains(ticket.Priorities, priority) {
		return priority
	}
	return ticket.DefaultPriority
}
