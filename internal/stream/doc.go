// Package stream is the sans-I/O core of erpc's streaming RPCs: the frames
// a stream's two ends exchange inside erpc requests and responses, and the
// flow-control state of one direction of one stream (a Sender and a
// Receiver). It reads no clock, starts no goroutine and takes no lock:
// the root package drives it under each stream's own lock, and the tests
// here replay it over many seeds with frames lost to nothing but
// reordered and duplicated at will.
//
// # Flow control
//
// Each direction of a stream has a window of W messages and B bytes,
// which its Receiver grants: the Sender may start message number seq
// while seq < the granted message limit and the bytes it has sent are
// below the granted byte limit (so the last message may overshoot the
// byte limit by its own size). The Receiver grants again, cumulatively,
// once the application has consumed half a window; it holds at most W
// messages and B bytes plus one message at any time, and refuses any
// frame beyond that (a hostile or broken peer), whatever order frames
// arrive in.
//
// # Frames
//
// A batch is a sequence of frames, each a kind byte, the stream ID
// (uvarint) and the kind's fields (integers are uvarints; byte strings a
// uvarint length then the bytes):
//
//	Data   1  id seq len bytes             a message, seq from 0 per direction
//	Close  2  id final                     the client sends no more: final = its message count
//	Cancel 3  id code                      the client gave up (code: Canceled or DeadlineExceeded)
//	Grant  4  id msgLimit byteLimit        the receiver's cumulative credit
//	Header 5  id len block                 response headers (a metadata block)
//	End    6  id final code len status len block
//	                                       the handler returned: final = its message count,
//	                                       code and status as erpc's error answer, trailers
//
// A server sends a stream's Header exactly once, before its first Data
// and its End; frames carry no order between batches, so a client may
// get them in any order, and waits for the Header before it hands out a
// message or the End.
//
// The parser treats every input as hostile: it returns an error for
// anything malformed and never panics (FuzzReader).
package stream
