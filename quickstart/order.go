package quickstart

import (
	"time"

	"github.com/apache/iceberg-go"
)

// Order is one row of demo.orders.
//
// Amount is held in cents because the column is decimal(10,2): an integer
// keeps the value exact through Arrow and Parquet and lets tests compare rows
// with ==-style equality instead of float tolerances.
type Order struct {
	OrderID     int64
	Customer    string
	Product     string
	Status      string
	AmountCents int64
	Quantity    int32
	CreatedAt   time.Time // microsecond precision, UTC
	UpdatedAt   time.Time // microsecond precision, UTC
	Note        *string   // nil is SQL NULL
}

// Equal reports whether two orders hold the same values in every column.
// It exists because Order holds time.Time and a pointer, which == and
// reflect.DeepEqual compare by representation rather than by value.
func (o Order) Equal(p Order) bool {
	if o.OrderID != p.OrderID || o.Customer != p.Customer || o.Product != p.Product ||
		o.Status != p.Status || o.AmountCents != p.AmountCents || o.Quantity != p.Quantity ||
		!o.CreatedAt.Equal(p.CreatedAt) || !o.UpdatedAt.Equal(p.UpdatedAt) {
		return false
	}
	if (o.Note == nil) != (p.Note == nil) {
		return false
	}
	return o.Note == nil || *o.Note == *p.Note
}

// Column names of demo.orders, shared by the schema, the Arrow codec and the
// scans that project a single column.
const (
	colOrderID   = "order_id"
	colCustomer  = "customer"
	colProduct   = "product"
	colStatus    = "status"
	colAmount    = "amount"
	colQuantity  = "quantity"
	colCreatedAt = "created_at"
	colUpdatedAt = "updated_at"
	colNote      = "note"
)

// Order statuses. The demo moves orders forward through this lifecycle, which
// gives consumers before/after images that differ in a meaningful way.
const (
	StatusPending   = "pending"
	StatusPaid      = "paid"
	StatusShipped   = "shipped"
	StatusDelivered = "delivered"
	StatusCancelled = "cancelled"
)

// OrdersSchema returns the Iceberg schema of demo.orders, with order_id as
// its identifier field so that key-based consumers (upsert-kafka, debezium
// keys) have a primary key to work with.
func OrdersSchema() *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: colOrderID, Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: colCustomer, Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: colProduct, Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 4, Name: colStatus, Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 5, Name: colAmount, Type: iceberg.DecimalTypeOf(10, 2), Required: true},
		iceberg.NestedField{ID: 6, Name: colQuantity, Type: iceberg.PrimitiveTypes.Int32, Required: true},
		iceberg.NestedField{ID: 7, Name: colCreatedAt, Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 8, Name: colUpdatedAt, Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 9, Name: colNote, Type: iceberg.PrimitiveTypes.String, Required: false},
	)
}
