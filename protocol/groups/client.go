package groups

import "context"

// clientKey keys the client identity in a request context.
type clientKey struct{}

type clientInfo struct {
	id   string
	host string
}

// WithClient returns ctx carrying the client id (from the request header)
// and host (the remote address) of the connection a request came on.
// JoinGroup records them for DescribeGroups and builds member ids from the
// client id, as Kafka does; without them both are empty. A client id is
// kept to its first maxIDBytes bytes; the host counts pending member ids
// (MaxPendingPerClient).
func WithClient(ctx context.Context, clientID, host string) context.Context {
	return context.WithValue(ctx, clientKey{}, clientInfo{id: boundedClientID(clientID), host: host})
}

func clientFrom(ctx context.Context) clientInfo {
	ci, _ := ctx.Value(clientKey{}).(clientInfo)
	return ci
}
