package remote

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/protoactor/actor"
	"google.golang.org/grpc"
)

func defaultConfig() *Config {
	return &Config{
		AdvertisedHost:           "",
		DialOptions:              []grpc.DialOption{grpc.WithInsecure()},
		EndpointWriterBatchSize:  1000,
		EndpointManagerBatchSize: 1000,
		EndpointWriterQueueSize:  1000000,
		EndpointManagerQueueSize: 1000000,
		Kinds:                    make(map[string]*actor.Props),
		MaxRetryCount:            5,
	}
}

func newConfig(options ...ConfigOption) *Config {
	config := defaultConfig()
	for _, option := range options {
		option(config)
	}
	return config
}

// Address returns the address of the remote
func (rc Config) Address() string {
	return fmt.Sprintf("%v:%v", rc.Host, rc.Port)
}

// Configure configures the remote
func Configure(host string, port int, options ...ConfigOption) *Config {
	c := newConfig(options...)
	c.Host = host
	c.Port = port

	return c
}

// Config is the configuration for the remote
type Config struct {
	Host                     string
	Port                     int
	AdvertisedHost           string
	ServerOptions            []grpc.ServerOption
	CallOptions              []grpc.CallOption
	DialOptions              []grpc.DialOption
	EndpointWriterBatchSize  int
	EndpointWriterQueueSize  int
	EndpointManagerBatchSize int
	EndpointManagerQueueSize int
	Kinds                    map[string]*actor.Props
	MaxRetryCount            int
	// GracefulStopTimeout bounds a graceful Shutdown's wait for the
	// other members to close their streams, after which the server is
	// stopped (mcpvisor patch 11; it was fixed at 10 s). 0: 10 s.
	GracefulStopTimeout time.Duration
	// Gate, when set, decides what the endpoint reader accepts from the
	// network (mcpvisor patch 19: it accepted any message, system
	// messages included, from anyone who could open a stream).
	Gate Gate
}

// Gate decides what the endpoint reader accepts from a stream. ctx is the
// stream's (grpc/peer gives its peer and TLS state).
type Gate interface {
	// Connect is given the system id a stream's ConnectRequest claims; an
	// error refuses the connection and ends the stream.
	Connect(ctx context.Context, systemID string) error
	// Deliver is given each message before it is delivered, with the
	// system id the stream claimed ("" when it sent no ConnectRequest); an
	// error drops the message.
	Deliver(ctx context.Context, systemID string, target, sender *actor.PID, message interface{}) error
}
