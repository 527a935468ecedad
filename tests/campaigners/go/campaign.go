// A third-party participant of an etcd election, written the way a user of etcd 3.4's Go
// `clientv3/concurrency` package would: one session, Campaign, then lead until the session
// ends. electop's tests start it to see what such a participant believes after an admin
// action. It prints one JSON line per change of belief:
//
//	{"t_ms":1700000000000,"id":"node-a","belief":"follower"|"leader"|"lost","detail":"..."}
//
// It notices only what the package lets it notice: its session's Done channel (closed when a
// keep-alive finds the lease gone). It does not watch its own key, so like any user of the
// package it does not notice a Resign by someone else (etcd issue #11777).
//
// Built offline against Debian's golang-etcd-server-dev:
//
//	GO111MODULE=off GOPATH=<tmp>:/usr/share/gocode go build -o campaign campaign.go
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
)

type belief struct {
	TMs    int64  `json:"t_ms"`
	ID     string `json:"id"`
	Belief string `json:"belief"`
	Detail string `json:"detail"`
}

func say(id, b, detail string) {
	line, _ := json.Marshal(belief{time.Now().UnixNano() / 1e6, id, b, detail})
	// One write per line, so a reader never sees half a belief.
	os.Stdout.Write(append(line, '\n'))
}

func main() {
	endpoints := flag.String("endpoints", "127.0.0.1:2379", "comma-separated etcd endpoints")
	election := flag.String("election", "", "election prefix (keys are <election>/<lease hex>)")
	id := flag.String("id", "", "this participant's proposal")
	ttl := flag.Int("ttl", 60, "session TTL in seconds")
	flag.Parse()
	if *election == "" || *id == "" {
		fmt.Fprintln(os.Stderr, "usage: campaign --endpoints E --election NAME --id ID [--ttl S]")
		os.Exit(2)
	}
	os.Exit(run(strings.Split(*endpoints, ","), *election, *id, *ttl))
}

func run(endpoints []string, election, id string, ttl int) int {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		say(id, "lost", "connect: "+err.Error())
		return 1
	}
	defer cli.Close()
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(ttl))
	if err != nil {
		say(id, "lost", "session: "+err.Error())
		return 1
	}
	e := concurrency.NewElection(s, election)

	// A careful user stops campaigning when the session ends or on a signal.
	ctx, cancel := context.WithCancel(context.Background())
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		select {
		case <-sigc:
		case <-s.Done():
		}
		cancel()
	}()

	say(id, "follower", fmt.Sprintf("campaigning as %s/%x", election, s.Lease()))
	if err := e.Campaign(ctx, id); err != nil {
		say(id, "lost", "campaign: "+err.Error())
		return 1
	}
	say(id, "leader", "elected: "+e.Key())
	<-ctx.Done()
	select {
	case <-s.Done():
		say(id, "lost", "session done (its lease is gone)")
		return 1
	default:
	}
	// A signal: hand over like etcdctl elect does.
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer rcancel()
	_ = e.Resign(rctx)
	say(id, "lost", "resigned on signal")
	return 0
}
