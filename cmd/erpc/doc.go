// Command erpc talks to erpc servers from the command line in grpcurl's
// shape: flags, then the target, then what to do. It lists a server's
// services, describes its methods and message types, calls a method with a
// JSON request and prints the JSON response, and checks the server's
// health. It learns the methods and their message types from the server's
// reflection service (github.com/erpc-go/erpc/reflection), so it needs no
// .proto files.
//
//	erpc 127.0.0.1:50051 list
//	erpc 127.0.0.1:50051 list greeter.v1.Greeter
//	erpc 127.0.0.1:50051 describe greeter.v1.Greeter.SayHello
//	erpc -d '{"name": "Ada"}' 127.0.0.1:50051 greeter.v1.Greeter/SayHello
//	echo '{"name": "Ada"}' | erpc -d @ -H 'x-user: ada' -max-time 2 127.0.0.1:50051 greeter.v1.Greeter/SayHello
//	erpc 127.0.0.1:50051 health greeter.v1.Greeter
//
// As with grpcurl, the request is -d's JSON (@ reads it from standard
// input), headers are -H 'key: value', -max-time bounds the whole run in
// seconds, -v prints the method, the request metadata, the response
// headers and trailers on standard output. describe marks the methods a
// server's .proto declares but it does not serve.
//
// The security flags are grpcurl's, with its meanings: -plaintext is a
// session without TLS; -insecure is TLS that does not verify the server
// (encrypted, not authenticated); -cacert FILE gives the roots that
// verify the server (default: the system's), -cert FILE and -key FILE
// the client's certificate, -servername NAME the name the server's
// certificate must have (default: the target's host). Any of the TLS
// flags makes the session TLS 1.3. With none of them, erpc's plaintext
// policy holds: a loopback or shm:// target is plaintext, since it never
// leaves the host, and any other is refused with exit status 2 and a
// message naming the flags (grpcurl would try TLS with the system's roots
// instead). A TLS server reached without TLS flags is named with the
// flags that reach it (-cacert FILE, -insecure). Targets are host:port,
// udp://host:port, tcp://host:port or shm:///path:
//
//	erpc -cacert ca.pem db.internal:50051 list
//	erpc -cacert ca.pem -cert me.pem -key me.key 10.0.0.7:50051 health
//	erpc -plaintext 10.0.0.7:50051 list
//
// Streams (Server.HandleStream; their shapes come from the service's
// descriptor, through reflection) are called too, and each response is
// printed as one line of JSON as it comes:
//
//	erpc -d '{"name": "Ada"}' 127.0.0.1:50051 greeter.v1.Greeter/ListGreeted
//	erpc -d @ 127.0.0.1:50051 greeter.v1.Greeter/Chat < messages.jsonl
//
// A server-streaming method takes -d's one request; a client-streaming or
// bidirectional one sends -d's messages, or with -d @ standard input's,
// each as soon as it is read, while the responses are printed, and
// half-closes at their end. A message that is not JSON of the method's
// type cancels the stream and exits 1; a stream that ends with an error
// prints its status on standard error and exits 64+code, as a unary call
// does. -max-time bounds the whole stream; -deadline applies to a stream
// only when given.
//
// The former order, the command before the target (erpc list TARGET,
// erpc call TARGET METHOD [REQUEST]), still works; it is deprecated and
// says so on standard error.
//
// Run erpc -h for the flags and the exit statuses.
package main
