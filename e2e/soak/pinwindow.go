package main

import "time"

// pinWindow is when a stopped group's committed offsets hold history the
// tables would otherwise expire: from the stop until its pin reaches
// lakegw.consumer.max-pin and the next maintenance passes have expired
// what it held. Pinned history is kept by design (its size is max-pin
// times the commit rate, not the table's age), so the peaks that measure
// growth with history leave the window out and report it beside them.
type pinWindow struct {
	group      string
	from, to   time.Time
	maxPin     time.Duration
	configured bool // false: no maintenance, nothing expires, nothing pins
}

// pinWindow is the window of group, stopped at stoppedAt. Two maintenance
// intervals cover the pass that starts just before the pin lapses and the
// one after it that commits the expiry.
func (c config) pinWindow(group string, stoppedAt time.Time) pinWindow {
	if !c.maintain || stoppedAt.IsZero() {
		return pinWindow{group: group}
	}
	return pinWindow{group: group, from: stoppedAt, to: stoppedAt.Add(c.maxPin + 2*c.maintainInterval),
		maxPin: c.maxPin, configured: true}
}

func (w pinWindow) holds(at time.Time) bool {
	return w.configured && !at.Before(w.from) && !at.After(w.to)
}
