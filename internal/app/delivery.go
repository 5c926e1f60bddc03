package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/delivery/rt"
	"github.com/oncecall/oncecall/internal/delivery/webhook"
	"github.com/oncecall/oncecall/internal/delivery/zendesk"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/metrics"
	"github.com/oncecall/oncecall/internal/secret"
)

// Destination builds the destination d names, with its credentials already
// in d.Token (from the environment or ResolveDestinationSecret).
func Destination(d config.Delivery) (delivery.Destination, error) {
	switch d.Destination {
	case config.DestinationWebhook:
		token, err := tokenOf(webhook.Name, d.Token)
		if err != nil {
			return nil, err
		}
		return webhook.New(d.URL, webhook.Options{
			Token:        token,
			Capabilities: delivery.Capabilities{DedupWindow: d.DedupWindow, Lookup: d.Lookup, ReplaysErrors: d.ReplaysErrors, SettleDelay: d.SettleDelay, RequestHorizon: d.RequestHorizon},
			Timeout:      d.Timeout,
			AllowHTTP:    d.AllowHTTP,
		})
	case config.DestinationZendesk:
		var creds zendesk.Credentials
		if d.Token != "" {
			var err error
			if creds, err = zendesk.ParseCredentials(d.Token); err != nil {
				return nil, err
			}
		}
		return zendesk.New(d.URL, zendesk.Options{
			Credentials: creds, Timeout: d.Timeout, SettleDelay: d.SettleDelay, RequestHorizon: d.RequestHorizon, AllowHTTP: d.AllowHTTP,
			TenantField: d.ZendeskTenantField, RequesterField: d.ZendeskRequesterField, RequesterID: d.ZendeskRequesterID,
		})
	case config.DestinationRT:
		token, err := tokenOf(rt.Name, d.Token)
		if err != nil {
			return nil, err
		}
		return rt.New(d.URL, rt.Options{Token: token, Queue: d.RTQueue, Timeout: d.Timeout, SettleDelay: d.SettleDelay, RequestHorizon: d.RequestHorizon, AllowHTTP: d.AllowHTTP})
	}
	return nil, fmt.Errorf("no destination %q", d.Destination)
}

// tokenOf reads the token of a destination of kind (webhook: a bearer
// token; rt: an RT auth token): the token itself, or (as the secret may
// hold it) {"token": "..."}.
func tokenOf(kind, v string) (string, error) {
	v = strings.TrimSpace(v)
	if !strings.HasPrefix(v, "{") {
		return v, nil
	}
	var s struct {
		Token string `json:"token"`
	}
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	if dec.Decode(&s) != nil {
		return "", errors.New(kind + `: the destination secret is JSON but not {"token": "..."}`)
	}
	return s.Token, nil
}

// Policy is the delivery policy d sets, the delivery package's defaults
// where d leaves a setting zero.
func Policy(d config.Delivery) delivery.Policy {
	p := delivery.DefaultPolicy
	if d.Timeout > 0 {
		p.Timeout = d.Timeout
	}
	if d.MaxAttempts > 0 {
		p.MaxAttempts = d.MaxAttempts
	}
	if d.MaxAge > 0 {
		p.MaxAge = d.MaxAge
	}
	return p
}

// Worker builds the delivery worker for cfg over store, or nil when cfg
// names no destination. With cfg.Metrics on, every attempt and every
// sweep's backlog becomes a CloudWatch EMF line on standard output.
func Worker(cfg config.Config, store *dynamo.Store, logger *slog.Logger) (*delivery.Worker, error) {
	if cfg.Delivery.Destination == "" {
		return nil, nil
	}
	dest, err := Destination(cfg.Delivery)
	if err != nil {
		return nil, err
	}
	w := &delivery.Worker{Store: store, Destination: dest, Policy: Policy(cfg.Delivery), Logger: logger, Voucher: store}
	if cfg.Metrics {
		w.Metrics = metrics.New(os.Stdout, cfg.MetricsNamespace, cfg.FunctionName, delivery.AttemptOutcomes)
	}
	return w, nil
}

// Outbox is what the callback hands new tickets to when cfg names a
// destination (nil otherwise): they are queued for it, and w (which may be
// nil without inline attempts) makes the inline first attempts cfg sets.
// The table's stream brings every ticket to the worker, on AWS and locally.
// The operation of a queued ticket is kept for the delivery's horizon when
// that is longer than the retention.
func Outbox(cfg config.Config, w *delivery.Worker) *delivery.Outbox {
	if cfg.Delivery.Destination == "" {
		return nil
	}
	return &delivery.Outbox{Name: cfg.Delivery.Destination, Worker: w, Inline: cfg.Delivery.Inline, Horizon: Policy(cfg.Delivery).Horizon()}
}

// ResolveDestinationSecret fills cfg's destination credentials from Secrets
// Manager when cfg names a secret: one read per cold start.
func ResolveDestinationSecret(ctx context.Context, awsCfg aws.Config, cfg config.Config) (config.Config, error) {
	if cfg.Delivery.SecretARN == "" {
		return cfg, nil
	}
	v, err := secret.Value(ctx, secretsmanager.NewFromConfig(awsCfg), cfg.Delivery.SecretARN, "destination")
	if err != nil {
		return cfg, err
	}
	cfg.Delivery.Token = v
	return cfg, nil
}

// DestinationFollower keeps a worker's destination credentials in step
// with the destination secret: Refresh, called before each invocation,
// reads the secret again once secret.RefreshInterval has passed since the
// last read (secret.RetryInterval after a failed one) and, when its value
// changed, gives the worker a destination built with the new value. A
// read that fails, or a value no destination can be built with, keeps the
// last good destination (a WARN line says so, never quoting the value).
// It is not safe for concurrent use: Lambda runs one invocation at a time.
type DestinationFollower struct {
	delivery config.Delivery
	worker   *delivery.Worker
	read     func(ctx context.Context) (string, error)
	now      func() time.Time
	logger   *slog.Logger
	next     time.Time
}

// NewDestinationFollower follows the secret for w, whose destination was
// built from d (d.Token as read at cold start, at now). read reads the
// secret's value; now (nil: time.Now) is the clock.
func NewDestinationFollower(d config.Delivery, w *delivery.Worker, read func(ctx context.Context) (string, error), now func() time.Time, logger *slog.Logger) *DestinationFollower {
	if now == nil {
		now = time.Now
	}
	return &DestinationFollower{delivery: d, worker: w, read: read, now: now, logger: logger, next: now().Add(secret.RefreshInterval)}
}

// FollowDestinationSecret is NewDestinationFollower reading cfg's
// destination secret from Secrets Manager; nil when cfg names none.
func FollowDestinationSecret(awsCfg aws.Config, cfg config.Config, w *delivery.Worker, logger *slog.Logger) *DestinationFollower {
	if cfg.Delivery.SecretARN == "" || w == nil {
		return nil
	}
	client := secretsmanager.NewFromConfig(awsCfg)
	read := func(ctx context.Context) (string, error) {
		return secret.Value(ctx, client, cfg.Delivery.SecretARN, "destination")
	}
	return NewDestinationFollower(cfg.Delivery, w, read, nil, logger)
}

// Refresh reads the secret again if it is time to.
func (f *DestinationFollower) Refresh(ctx context.Context) {
	now := f.now()
	if now.Before(f.next) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, secret.ReadTimeout)
	defer cancel()
	v, err := f.read(ctx)
	if err == nil && v == f.delivery.Token {
		f.next = now.Add(secret.RefreshInterval)
		return
	}
	var dest delivery.Destination
	if err == nil {
		d := f.delivery
		d.Token = v
		if dest, err = Destination(d); err == nil {
			f.delivery = d
		}
	}
	if err != nil {
		f.next = now.Add(secret.RetryInterval)
		if f.logger != nil {
			f.logger.Warn("destination secret", slog.String("error", "not refreshed, the last good credentials stay in use: "+err.Error()))
		}
		return
	}
	if c, ok := f.worker.Destination.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
	f.worker.Destination = dest
	f.next = now.Add(secret.RefreshInterval)
}
