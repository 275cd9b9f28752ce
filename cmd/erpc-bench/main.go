// Command erpc-bench measures erpc-go beside its floor and its peers.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "erpc-bench: not built yet")
	os.Exit(2)
}
