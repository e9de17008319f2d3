package feedback

// gone is how a request left the window.
type gone uint8

const (
	goneAnswered gone = iota + 1 // its feedback was joined
	goneExpired                  // unanswered: too old, pushed out or replaced
)

// memory remembers the keys of the last size requests that left the
// window, in a ring indexed by key: O(1) per operation, bounded in memory.
type memory struct {
	size  int
	ring  []remembered // grows to size, then is overwritten from next
	index map[key]int
	next  int
}

type remembered struct {
	k   key
	how gone
}

func newMemory(size int) *memory {
	return &memory{size: size, index: make(map[key]int)}
}

// add remembers that k left the window, forgetting the oldest key when m
// is full.
func (m *memory) add(k key, how gone) {
	switch {
	case m.size == 0:
		return
	case len(m.ring) < m.size:
		m.index[k] = len(m.ring)
		m.ring = append(m.ring, remembered{k, how})
		return
	}
	if old := m.ring[m.next].k; m.index[old] == m.next {
		delete(m.index, old)
	}
	m.ring[m.next] = remembered{k, how}
	m.index[k] = m.next
	m.next = (m.next + 1) % m.size
}

// lookup returns how k left, 0 when m does not remember it.
func (m *memory) lookup(k key) gone {
	if i, ok := m.index[k]; ok {
		return m.ring[i].how
	}
	return 0
}

// forget drops k: it was recorded again.
func (m *memory) forget(k key) { delete(m.index, k) }
