package hiccup

import (
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeTime: each Sleep advances the clock by what was asked plus the next of lates.
type fakeTime struct {
	now   time.Time
	lates []time.Duration
}

func (f *fakeTime) Sleep(d time.Duration) {
	late := f.lates[0]
	f.lates = f.lates[1:]
	f.now = f.now.Add(d + late)
}

func (f *fakeTime) Now() time.Time { return f.now }

func TestMeterRecordsLateWakeUps(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	ft := &fakeTime{now: t0, lates: []time.Duration{0, 20 * time.Microsecond, 3 * time.Millisecond, time.Millisecond, 999 * time.Microsecond}}
	m, err := New(Config{Interval: time.Millisecond, Sleep: ft.Sleep, Now: ft.Now})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		m.sample()
	}
	var h dto.Metric
	if err := m.hist.Write(&h); err != nil {
		t.Fatal(err)
	}
	if got, want := h.GetHistogram().GetSampleCount(), uint64(5); got != want {
		t.Errorf("histogram count = %d, want %d", got, want)
	}
	wantSum := (20*time.Microsecond + 3*time.Millisecond + time.Millisecond + 999*time.Microsecond).Seconds()
	if got := h.GetHistogram().GetSampleSum(); got < wantSum-1e-12 || got > wantSum+1e-12 {
		t.Errorf("histogram sum = %v, want %v", got, wantSum)
	}
	// Only wake-ups at least Record (1 ms) late are kept; each starts when its sleep should have ended.
	stalls, dropped := m.Stalls()
	want := []Stall{
		{Start: t0.Add(3*time.Millisecond + 20*time.Microsecond), Late: 3 * time.Millisecond},
		{Start: t0.Add(7*time.Millisecond + 20*time.Microsecond), Late: time.Millisecond},
	}
	if dropped != 0 || len(stalls) != len(want) {
		t.Fatalf("stalls = %v (dropped %d), want %v", stalls, dropped, want)
	}
	for i := range want {
		if !stalls[i].Start.Equal(want[i].Start) || stalls[i].Late != want[i].Late {
			t.Errorf("stall %d = %v, want %v", i, stalls[i], want[i])
		}
	}
	var b strings.Builder
	if err := m.WriteStalls(&b); err != nil {
		t.Fatal(err)
	}
	wantText := "# start_unix_ns late_ns (interval 1ms, recorded from 1ms, samples 5, dropped 0)\n" +
		"1700000000003020000 3000000\n" +
		"1700000000007020000 1000000\n"
	if b.String() != wantText {
		t.Errorf("WriteStalls =\n%s\nwant\n%s", b.String(), wantText)
	}
}

func TestMeterRingKeepsTheNewest(t *testing.T) {
	t0 := time.Unix(0, 0)
	lates := make([]time.Duration, 7)
	for i := range lates {
		lates[i] = time.Duration(i+1) * time.Millisecond
	}
	ft := &fakeTime{now: t0, lates: lates}
	m, err := New(Config{Interval: time.Millisecond, Ring: 3, Sleep: ft.Sleep, Now: ft.Now})
	if err != nil {
		t.Fatal(err)
	}
	for range 7 {
		m.sample()
	}
	stalls, dropped := m.Stalls()
	if dropped != 4 {
		t.Errorf("dropped = %d, want 4", dropped)
	}
	var got []time.Duration
	for _, s := range stalls {
		got = append(got, s.Late)
	}
	if want := []time.Duration{5 * time.Millisecond, 6 * time.Millisecond, 7 * time.Millisecond}; len(got) != 3 ||
		got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("ring = %v, want %v (oldest first)", got, want)
	}
}

func TestMeterStartStop(t *testing.T) {
	m, err := New(Config{Interval: 100 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	m.Stop() // returns once the sleeper has ended (goleak checks at exit)
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, c := range []Config{{}, {Interval: -1}, {Interval: time.Millisecond, Record: -1}, {Interval: time.Millisecond, Ring: -1}} {
		if _, err := New(c); err == nil || !strings.Contains(err.Error(), "hiccup: ") {
			t.Errorf("New(%+v) = %v, want an error", c, err)
		}
	}
}
