package state

import (
	"strconv"
	"strings"
)

// dialect is what differs between the two databases the store runs on:
// SQLite (one gateway, the default) and PostgreSQL (several gateways). The
// queries are written once, in SQLite's placeholder style, and rebound.
type dialect struct {
	name string
	// numbered placeholders ($1, $2...) instead of ?.
	numbered bool
	// insertOrder is the column that orders rows as they were inserted:
	// SQLite's implicit rowid, an identity column in PostgreSQL.
	insertOrder string
	// clientBytes: strings a client chose (group and transactional ids,
	// commit metadata) are stored as bytes, since PostgreSQL's text refuses
	// NUL and invalid UTF-8, which the Kafka protocol lets through. SQLite
	// keeps them as text: a blob never equals the text an older store holds.
	clientBytes bool
}

var (
	sqliteDialect   = &dialect{name: "sqlite", insertOrder: "rowid"}
	postgresDialect = &dialect{name: "postgres", numbered: true, insertOrder: "id", clientBytes: true}
)

// q rebinds a query written with ? placeholders to the dialect's. The
// queries hold no ? inside literals.
func (d *dialect) q(query string) string {
	if !d.numbered {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] != '?' {
			b.WriteByte(query[i])
			continue
		}
		n++
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}

// client is the value a client-chosen string is stored as.
func (d *dialect) client(s string) any {
	if d.clientBytes {
		return []byte(s)
	}
	return s
}
