// The test bed's OCI registry: go-containerregistry's in-memory registry handler,
// served on a loopback address (127.0.0.1:0 by default, so the kernel picks a free
// port). The first line on stdout is "listening on HOST:PORT"; tests read it.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	listener, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("listen %s: %v", *addr, err)
	}
	fmt.Fprintf(os.Stdout, "listening on %s\n", listener.Addr())
	server := &http.Server{Handler: registry.New(), ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(server.Serve(listener))
}
