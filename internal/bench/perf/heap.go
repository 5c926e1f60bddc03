package perf

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/httpapi"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/identity"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/ticket"
)

// HeapResult is the heap in use and the goroutines of a process serving
// calls, after a first and after a second number of calls.
type HeapResult struct {
	Users                    int
	Calls1, Calls2           int
	HeapInuse1, HeapInuse2   uint64
	Goroutines1, Goroutines2 int
	Kinds                    map[string]int
}

// Ratio is the heap in use after Calls2 over that after Calls1.
func (r HeapResult) Ratio() float64 { return float64(r.HeapInuse2) / float64(r.HeapInuse1) }

// ExternalStore is an embedded store in a child process, so that its
// growth (it keeps every item in memory) is not counted as oncecall's.
type ExternalStore struct {
	URL string
	cmd *exec.Cmd
}

// StartExternalStore runs `exe store` and reads the store URL it prints.
func StartExternalStore(exe string) (*ExternalStore, error) {
	cmd := exec.Command(exe, "store")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("store process: %w", err)
	}
	return &ExternalStore{URL: strings.TrimSpace(line), cmd: cmd}, nil
}

// Close stops the child process.
func (s *ExternalStore) Close() error {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	return nil
}

// heapUser is what the workload remembers of one user's latest operation.
type heapUser struct {
	id, tenant  string
	rid, ticket string
	opKey       string
}

// Heap serves first then second calls over a store at storeURL from 2
// clients, each with its own half of users users, in blocks of ten calls per
// user: three created calls, four replays and three get_ticket reads of the
// latest. When a user creates an operation, the previous one and its ticket
// are deleted from the store, as TTL expiry would: the embedded store copies
// a whole table for every transaction, so the table is kept small to keep
// the run short. Nonces are at BCrypt's lowest cost: the code path is the
// same, the CPU time smaller.
//
// door is "callback" or "mcp": the door every call goes through.
func Heap(ctx context.Context, storeURL string, users, first, second int, door string) (HeapResult, error) {
	r := HeapResult{Users: users, Calls1: first, Calls2: second, Kinds: map[string]int{}}
	svc, err := StartService(ctx, storeURL, "oncecall-heap-"+door)
	if err != nil {
		return r, err
	}
	defer func() { _ = svc.Close() }()
	all := make([]*heapUser, users)
	for i := range all {
		id := "load-" + strconv.Itoa(i)
		all[i] = &heapUser{id: id, tenant: "tenant-load-" + strconv.Itoa(i%10)}
		u := identity.User{ExternalID: id, Tenant: all[i].tenant, Name: id, Active: true,
			Functions: []string{ticket.CreateName, ticket.GetName}}
		if err := svc.Store.PutUser(ctx, u); err != nil {
			return r, err
		}
	}
	client, err := DemoClient(nonce.MinCost)
	if err != nil {
		return r, err
	}
	defer client.Close()
	send := heapSender{url: svc.URL, post: client.Post}
	if door == "mcp" {
		send = heapSender{url: strings.TrimSuffix(svc.URL, httpapi.CallbackPath) + httpapi.MCPPath, post: client.PostMCP}
	}
	admin := dynamodb.NewFromConfig(dynamo.LocalConfig("us-east-1"), dynamo.Options(storeURL))
	var kindsMu sync.Mutex

	// run makes calls [from, to): call i is client i%2's (i/2)th call.
	run := func(from, to int) error {
		var wg sync.WaitGroup
		errs := make(chan error, 2)
		for c := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := from; i < to; i++ {
					if i%2 != c {
						continue
					}
					n := i / 2                   // this client's call number
					u := all[(2*(n/10)+c)%users] // a block of ten per user
					kind, err := heapCall(ctx, send, admin, svc, u, n%10, i)
					if err != nil {
						errs <- err
						return
					}
					kindsMu.Lock()
					r.Kinds[kind]++
					kindsMu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(errs)
		return <-errs
	}
	measure := func() (uint64, int) {
		client.Close() // idle connections are not the server's to keep
		time.Sleep(100 * time.Millisecond)
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse, runtime.NumGoroutine()
	}
	if err := run(0, first); err != nil {
		return r, err
	}
	r.HeapInuse1, r.Goroutines1 = measure()
	if err := run(first, second); err != nil {
		return r, err
	}
	r.HeapInuse2, r.Goroutines2 = measure()
	return r, nil
}

// heapSender sends a callback body through one door.
type heapSender struct {
	url  string
	post func(url string, body []byte) (Reply, time.Duration, error)
}

func (s heapSender) expect(body []byte, kind string) error {
	r, _, err := s.post(s.url, body)
	if err == nil && r.Kind() != kind {
		err = fmt.Errorf("%s answered %d %s, want %s", s.url, r.Status, r.Raw, kind)
	}
	return err
}

// heapCall makes the step-th call of a user's block.
func heapCall(ctx context.Context, send heapSender, admin *dynamodb.Client, svc *Service, u *heapUser, step, i int) (string, error) {
	switch {
	case u.rid != "" && (step == 1 || step == 2 || step == 5 || step == 8):
		return "deduplicated", send.expect(CreateBody(u.id, u.rid), "deduplicated")
	case u.ticket != "" && (step == 3 || step == 6 || step == 9):
		return "found", send.expect(GetBody(u.id, u.ticket), "found")
	}
	rid := "h-" + strconv.Itoa(i)
	body := CreateBody(u.id, rid)
	rep, _, err := send.post(send.url, body)
	if err != nil {
		return "", err
	}
	if rep.Kind() != "created" {
		return "", errors.New("heap run: " + string(rep.Raw))
	}
	req, p := protocol.Decode(body)
	if p != nil {
		return "", p
	}
	args, v := ticket.Create.Normalize(req.Arguments)
	if len(v) > 0 {
		return "", fmt.Errorf("heap run: invalid arguments: %v", v)
	}
	key, err := idempotency.Derive(idempotency.PolicyArguments, idempotency.Operation{Tenant: u.tenant, RequestID: rid, Function: ticket.CreateName, Arguments: args})
	if err != nil {
		return "", err
	}
	if u.opKey != "" {
		for _, pk := range []string{"op#" + u.opKey, "ticket#" + u.ticket} {
			_, err := admin.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &svc.Table,
				Key: map[string]types.AttributeValue{dynamo.PartitionKey: &types.AttributeValueMemberS{Value: pk}}})
			if err != nil {
				return "", err
			}
		}
	}
	u.rid, u.opKey = rid, key.ID
	u.ticket, _ = rep.Body["ticket_id"].(string)
	return "created", nil
}
