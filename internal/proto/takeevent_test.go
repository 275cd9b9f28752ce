package proto

import (
	"math/rand/v2"
	"testing"
)

// TestTakeEventModel drives the event queue with random emits (as handlers
// calling the engine do), TakeEvent and NextEvent, against a FIFO model:
// events come out once, in order; an event TakeEvent returned keeps its
// content through the emits that follow until the next take; and a slot
// reused after the queue drained carries nothing of its last event.
func TestTakeEventModel(t *testing.T) {
	for seed := uint64(1); seed <= 500; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		e := &Engine{}
		var model []CallID
		next := CallID(1)
		var held *Event
		var heldCall CallID
		for range 400 {
			if held != nil && held.Call != heldCall {
				t.Fatalf("seed %d: a taken event changed from call %d to %d before the next take", seed, heldCall, held.Call)
			}
			switch r := rng.IntN(10); {
			case r < 5: // a handler's call emits an event
				ev := e.newEvent(EventResponse)
				if ev.Call != 0 || ev.Data != nil || ev.Err != nil || ev.Tag != nil {
					t.Fatalf("seed %d: a reused slot held %+v", seed, *ev)
				}
				ev.Call, ev.Data = next, []byte{byte(next)}
				model = append(model, next)
				next++
			case r < 8:
				ev := e.TakeEvent()
				held = ev
				if ev == nil {
					if len(model) != 0 {
						t.Fatalf("seed %d: nil with %d events queued", seed, len(model))
					}
					continue
				}
				if len(model) == 0 || ev.Call != model[0] || len(ev.Data) != 1 || ev.Data[0] != byte(ev.Call) {
					t.Fatalf("seed %d: took call %d, want %v", seed, ev.Call, model)
				}
				heldCall, model = ev.Call, model[1:]
			default:
				held = nil
				ev, ok := e.NextEvent()
				if ok != (len(model) > 0) || ok && ev.Call != model[0] {
					t.Fatalf("seed %d: next %v %d, want %v", seed, ok, ev.Call, model)
				}
				if ok {
					model = model[1:]
				}
			}
		}
	}
}
