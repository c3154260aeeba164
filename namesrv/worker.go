package namesrv

import "sync"

// worker runs tasks one at a time, in submission order, on one goroutine, from a bounded
// queue. The name server keeps work that can take long off the network event loops with it:
// broker registrations (decoding a body of thousands of topics takes tens of milliseconds)
// and KV changes (a file write with fsync). One goroutine per kind keeps each kind in
// arrival order — a broker's registrations and its unregistration are applied in the order
// they came — and keeps the two kinds from waiting on each other.
//
// Safe for concurrent use.
type worker struct {
	mu     sync.Mutex // guards closed against submit racing close
	closed bool
	queue  chan func()
}

func newWorker(capacity int) *worker {
	return &worker{queue: make(chan func(), capacity)}
}

// submit queues task; false when the queue is full (answer SYSTEM_BUSY) or closed.
func (w *worker) submit(task func()) bool {
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

// run executes tasks until the worker is closed and its queue drained.
func (w *worker) run() {
	for task := range w.queue {
		task()
	}
}

// close refuses further tasks; run returns after the queued ones. Call it once.
func (w *worker) close() {
	w.mu.Lock()
	w.closed = true
	close(w.queue)
	w.mu.Unlock()
}
