// Copyright (C) 2017 - 2024 Asynkron AB All rights reserved

package cluster

import (
	"google.golang.org/protobuf/proto"
	"log/slog"
	"time"

	"github.com/asynkron/gofun/set"
	"github.com/mcpvisor/mcpvisor/internal/protoactor/actor"
)

// convenience customary type to represent an empty value
// that takes no space in memory.
type empty struct{}

// Actor used to send gossip messages around
type GossipActor struct {
	gossipRequestTimeout time.Duration
	gossip               Gossip
	myID                 string // mcpvisor patch 19

	/// Message throttler
	throttler actor.ShouldThrottle
}

// Creates a new GossipActor and returns a pointer to its location in the heap
func NewGossipActor(requestTimeout time.Duration, myID string, getBlockedMembers func() set.Set[string], fanOut int, maxSend int, system *actor.ActorSystem) *GossipActor {

	logger := system.Logger()
	informer := newInformer(myID, getBlockedMembers, fanOut, maxSend, logger)
	gossipActor := GossipActor{
		gossipRequestTimeout: requestTimeout,
		gossip:               informer,
		myID:                 myID,
	}

	gossipActor.throttler = actor.NewThrottleWithLogger(logger, 3, 60*time.Second, func(logger *slog.Logger, counter int32) {
		logger.Debug("[Gossip] Sending GossipRequest", slog.Int("throttled", int(counter)))
	})

	return &gossipActor
}

// Receive method.
func (ga *GossipActor) Receive(ctx actor.Context) {
	switch r := ctx.Message().(type) {
	case *actor.Started, *actor.Stopping, *actor.Stopped:
		// pass
	case *SetGossipState:
		ga.onSetGossipState(r, ctx)
	case *SetGossipMapState:
		ga.onSetGossipMapState(r, ctx)
	case *GetGossipMapStateRequest:
		ga.onGetGossipMapStateRequest(r, ctx)
	case *RemoveGossipMapState:
		ga.onRemoveGossipMapState(r, ctx)
	case *GetGossipMapKeysRequest:
		ga.onGetGossipMapKeys(r, ctx)
	case *GetGossipStateRequest:
		ga.onGetGossipStateKey(r, ctx)
	case *GossipRequest:
		ga.onGossipRequest(r, ctx)
	case *SendGossipStateRequest:
		ga.onSendGossipState(ctx)
	case *AddConsensusCheck:
		ga.onAddConsensusCheck(r)
	case *RemoveConsensusCheck:
		ga.onRemoveConsensusCheck(r)
	case *ClusterTopology:
		ga.onClusterTopology(r)
	case *GossipResponse:
		ctx.Logger().Error("GossipResponse should not be received by GossipActor") // it should be a response to a request
	default:
		ctx.Logger().Warn("Gossip received unknown message request", slog.Any("message", r))
	}
}

func (ga *GossipActor) onClusterTopology(topology *ClusterTopology) {
	ga.gossip.UpdateClusterTopology(topology)
}

func (ga *GossipActor) onAddConsensusCheck(r *AddConsensusCheck) {
	ga.gossip.AddConsensusCheck(r.ID, r.Check)
}

func (ga *GossipActor) onRemoveConsensusCheck(r *RemoveConsensusCheck) {
	ga.gossip.RemoveConsensusCheck(r.ID)
}

func (ga *GossipActor) onGetGossipStateKey(r *GetGossipStateRequest, ctx actor.Context) {
	state := ga.gossip.GetState(r.GossipStateKey)
	res := NewGetGossipStateResponse(state)
	ctx.Respond(&res)
}

func (ga *GossipActor) onGossipRequest(r *GossipRequest, ctx actor.Context) {
	if ga.throttler() == actor.Open {
		ctx.Logger().Debug("OnGossipRequest", slog.Any("sender", ctx.Sender()))
	}
	// mcpvisor patch 19: the state was merged before the sender was
	// checked, so gossip from anyone who could reach the actor was taken
	// (and FromMemberId named the receiver, below): merge only a
	// member's.
	if !GetCluster(ctx.ActorSystem()).MemberList.ContainsMemberID(r.FromMemberId) {
		ctx.Logger().Warn("Got gossip request from unknown member", slog.String("MemberId", r.FromMemberId))

		// No answer: an answer commits the sender's offsets, and its
		// state, not taken, would never be sent again once it is known.
		return
	}
	ga.ReceiveState(r.State, ctx)

	// mcpvisor patch 19: the delta for the sender was computed here and
	// thrown away (acking is off), and computing it marks it sent
	// (GetMemberStateDelta writes the committed offsets): harmless while
	// FromMemberId named the receiver, it lost every update for the
	// sender once it named the sender.
	ctx.Respond(&GossipResponse{})
	return

	// turn off acking for now

	//msg := GossipResponse{
	//	State: memberState.State,
	//}
	//future := ctx.RequestFuture(ctx.Sender(), &msg, GetCluster(ctx.ActorSystem()).Config.GossipRequestTimeout)
	//
	//ctx.ReenterAfter(future, func(res interface{}, err error) {
	//	if err != nil {
	//		plog.Warn("onGossipRequest failed", log.String("MemberId", r.MemberId), log.Error(err))
	//		return
	//	}
	//
	//	if _, ok := res.(*GossipResponseAck); ok {
	//		memberState.CommitOffsets()
	//		return
	//	}
	//
	//	m, ok := res.(proto.Message)
	//	if !ok {
	//		plog.Warn("onGossipRequest failed", log.String("MemberId", r.MemberId), log.Error(err))
	//		return
	//	}
	//	n := string(proto.MessageName(m).Name())
	//
	//	plog.Error("onGossipRequest received unknown response message", log.String("type", n), log.Message(r))
	//})
}

func (ga *GossipActor) onSetGossipState(r *SetGossipState, ctx actor.Context) {
	key, message := r.GossipStateKey, r.Value
	ctx.Logger().Debug("Setting GossipState", slog.String("key", key), slog.Any("message", message))
	ga.gossip.SetState(key, message)

	if ctx.Sender() != nil {
		ctx.Respond(&SetGossipStateResponse{})
	}
}

func (ga *GossipActor) onSendGossipState(ctx actor.Context) {
	ga.gossip.SendState(func(memberState *MemberStateDelta, member *Member) {
		ga.sendGossipForMember(member, memberState, ctx)
	})
	ctx.Respond(&SendGossipStateResponse{})
}

func (ga *GossipActor) ReceiveState(remoteState *GossipState, ctx actor.Context) {
	// mcpvisor patch 19: a member's state is taken only while it is a
	// member: gossip naming made-up member ids is not merged.
	if remoteState == nil {
		return
	}
	members := GetCluster(ctx.ActorSystem()).MemberList
	known := &GossipState{Members: make(map[string]*GossipMemberState, len(remoteState.Members))}
	for id, st := range remoteState.Members {
		if members.ContainsMemberID(id) {
			known.Members[id] = st
		}
	}
	// stream our updates
	updates := ga.gossip.ReceiveState(known)
	for _, update := range updates {
		ctx.ActorSystem().EventStream.Publish(update)
	}
}

func (ga *GossipActor) sendGossipForMember(member *Member, memberStateDelta *MemberStateDelta, ctx actor.Context) {
	pid := actor.NewPID(member.Address(), DefaultGossipActorName)
	if ga.throttler() == actor.Open {
		ctx.Logger().Debug("Sending GossipRequest", slog.String("MemberId", member.Id))
	}

	// a short timeout is massively important, we cannot afford hanging around waiting
	// for timeout, blocking other gossips from getting through

	// mcpvisor patch 7: the delta shares its entries with the actor's
	// live state, which the next SetState changes while the endpoint
	// writer, on another goroutine, is still serializing this request: a
	// data race, and a torn message. Send a copy.
	msg := GossipRequest{
		FromMemberId: ga.myID, // mcpvisor patch 19: it named the receiver
		State:        proto.Clone(memberStateDelta.State).(*GossipState),
	}
	future := ctx.RequestFuture(pid, &msg, ga.gossipRequestTimeout)

	ctx.ReenterAfter(future, func(res interface{}, err error) {
		if err != nil {
			ctx.Logger().Warn("sendGossipForMember failed", slog.String("MemberId", member.Id), slog.Any("error", err))
			return
		}

		resp, ok := res.(*GossipResponse)
		if !ok {
			ctx.Logger().Error("sendGossipForMember received unknown response message", slog.Any("message", resp))

			return
		}

		memberStateDelta.CommitOffsets()

		if resp.State != nil {
			ga.ReceiveState(resp.State, ctx)
		}
	})
}

func (ga *GossipActor) onSetGossipMapState(r *SetGossipMapState, ctx actor.Context) {
	if ga.throttler() == actor.Open {
		ctx.Logger().Debug("Setting GossipMapState", slog.String("key", r.MapKey), slog.Any("message", r.Value))
	}
	ga.gossip.SetMapState(r.GossipStateKey, r.MapKey, r.Value)
}

func (ga *GossipActor) onRemoveGossipMapState(r *RemoveGossipMapState, ctx actor.Context) {
	if ga.throttler() == actor.Open {
		ctx.Logger().Debug("Removing GossipMapState", slog.String("key", r.MapKey))
	}
	ga.gossip.RemoveMapState(r.GossipStateKey, r.MapKey)
}

func (ga *GossipActor) onGetGossipMapKeys(r *GetGossipMapKeysRequest, ctx actor.Context) {
	if ga.throttler() == actor.Open {
		ctx.Logger().Debug("Getting GossipMapKeys", slog.String("key", r.GossipStateKey))
	}
	keys := ga.gossip.GetMapKeys(r.GossipStateKey)
	res := &GetGossipMapKeysResponse{
		MapKeys: keys,
	}
	ctx.Respond(res)
}

func (ga *GossipActor) onGetGossipMapStateRequest(r *GetGossipMapStateRequest, ctx actor.Context) {
	if ga.throttler() == actor.Open {
		ctx.Logger().Debug("Setting GossipMapState", slog.String("key", r.MapKey))
	}
	a := ga.gossip.GetMapState(r.GossipStateKey, r.MapKey)
	res := &GetGossipMapStateResponse{
		Value: a,
	}
	ctx.Respond(res)
}
