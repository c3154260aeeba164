// Package workqueue runs tasks off the network event loops from a bounded queue.
package workqueue

import "sync"

// Queue runs tasks from a bounded queue on the goroutines that call Run: one goroutine
// runs them one at a time in submission order; several share the queue. The name server
// keeps work that can take long off the network event loops with it: broker registrations
// (decoding a body of thousands of topics takes tens of milliseconds) and KV changes (a
// file write with fsync), one goroutine per kind, which keeps each kind in arrival order
// and keeps the two kinds from waiting on each other. The controller runs its requests
// that wait for a raft commit on a few goroutines sharing one queue.
//
// Safe for concurrent use.
type Queue struct {
	mu     sync.Mutex // guards closed against submit racing close
	closed bool
	queue  chan func()
}

// New returns a queue that holds up to capacity tasks.
func New(capacity int) *Queue {
	return &Queue{queue: make(chan func(), capacity)}
}

// Submit queues task; false when the queue is full (answer SYSTEM_BUSY) or closed.
func (w *Queue) Submit(task func()) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	select {
	case w.queue <- task:
		return true
	default:
		return false
	}
}

// Run executes tasks until the queue is closed and drained; call it from as many
// goroutines as should run tasks.
func (w *Queue) Run() {
	for task := range w.queue {
		task()
	}
}

// Close refuses further tasks; Run returns after the queued ones. Call it once.
func (w *Queue) Close() {
	w.mu.Lock()
	w.closed = true
	close(w.queue)
	w.mu.Unlock()
}
