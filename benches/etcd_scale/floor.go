// The least any client can do to show what `electop status` shows of an etcd prefix: one
// range, then every distinct lease's TTL (etcd has no call that reads many leases' TTLs, so
// one LeaseTimeToLive each), 64 in flight as electop reads them. Written with etcd 3.4's own
// Go client, so the bench can tell electop's cost from the protocol's: etcd_scale prints
// electop's time beside this one's.
//
// Usage: floor ENDPOINT PREFIX. Built offline against Debian's golang-etcd-server-dev.
package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"go.etcd.io/etcd/clientv3"
)

const inFlight = 64

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: floor ENDPOINT PREFIX")
		os.Exit(2)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{os.Args[1]}, DialTimeout: 5 * time.Second})
	if err != nil {
		fail(err)
	}
	defer c.Close()
	ctx := context.Background()
	resp, err := c.Get(ctx, os.Args[2], clientv3.WithPrefix())
	if err != nil {
		fail(err)
	}
	seen := map[int64]bool{}
	ids := make(chan int64)
	var wg sync.WaitGroup
	var failed error
	var mu sync.Mutex
	for i := 0; i < inFlight; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				if _, err := c.TimeToLive(ctx, clientv3.LeaseID(id)); err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
				}
			}
		}()
	}
	for _, kv := range resp.Kvs {
		if kv.Lease != 0 && !seen[kv.Lease] {
			seen[kv.Lease] = true
			ids <- kv.Lease
		}
	}
	close(ids)
	wg.Wait()
	if failed != nil {
		fail(failed)
	}
	fmt.Printf("%d keys, %d leases\n", len(resp.Kvs), len(seen))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "floor:", err)
	os.Exit(1)
}
