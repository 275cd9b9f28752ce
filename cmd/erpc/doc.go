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
// seconds, and -plaintext is accepted (erpc sessions are not encrypted
// yet, so it changes nothing). The command calls unary methods; describe
// marks the methods it cannot call (streams, and methods the server's
// descriptors declare but it does not serve).
//
// The former order, the command before the target (erpc list TARGET,
// erpc call TARGET METHOD [REQUEST]), still works; it is deprecated and
// says so on standard error.
//
// Run erpc -h for the flags and the exit statuses.
package main
