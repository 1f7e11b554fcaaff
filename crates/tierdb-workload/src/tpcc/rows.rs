//! Row layouts of the TPC-C tables: fixed-width values, little-endian numbers, strings
//! zero-padded to their largest length.
//!
//! Fixed offsets let a transaction change a field in place: the fields a transaction
//! updates together sit next to each other at the start of the row (a stock row's
//! quantity, year-to-date, order and remote counts are bytes 0..12), so one patch of a
//! few bytes logs and rewrites them, not the 302-byte row. Money is in cents (`i64`),
//! tax and discount rates in ten-thousandths (`u32`), dates in seconds (`u64`, 0 for
//! the specification's null), a carrier id of 0 is null.

/// Reads fields in order from a row.
pub(crate) struct Get<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Get<'a> {
    pub(crate) fn new(b: &'a [u8]) -> Self {
        Get { b, at: 0 }
    }
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let v = self.b[self.at..self.at + N].try_into().expect("checked length");
        self.at += N;
        v
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.take())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn i32(&mut self) -> i32 {
        i32::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
    fn i64(&mut self) -> i64 {
        i64::from_le_bytes(self.take())
    }
}

/// Appends fields in order to a row.
pub(crate) struct Out(Vec<u8>);

impl Out {
    fn with_capacity(n: usize) -> Self {
        Out(Vec::with_capacity(n))
    }
    fn u8(mut self, v: u8) -> Self {
        self.0.push(v);
        self
    }
    fn u16(mut self, v: u16) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u32(mut self, v: u32) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn i32(mut self, v: i32) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(mut self, v: u64) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn i64(mut self, v: i64) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn bytes(mut self, v: &[u8]) -> Self {
        self.0.extend_from_slice(v);
        self
    }
    fn done(self, len: usize) -> Vec<u8> {
        debug_assert_eq!(self.0.len(), len, "a row has its layout's length");
        self.0
    }
}

/// A street address: street 1 and 2, city, state, zip (71 bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Address {
    pub street_1: [u8; 20],
    pub street_2: [u8; 20],
    pub city: [u8; 20],
    pub state: [u8; 2],
    pub zip: [u8; 9],
}

impl Address {
    const BYTES: usize = 71;
    fn put(&self, o: Out) -> Out {
        o.bytes(&self.street_1).bytes(&self.street_2).bytes(&self.city).bytes(&self.state).bytes(&self.zip)
    }
    fn get(g: &mut Get<'_>) -> Address {
        Address { street_1: g.take(), street_2: g.take(), city: g.take(), state: g.take(), zip: g.take() }
    }
}

macro_rules! row_len_check {
    ($t:ty, $b:expr) => {
        if $b.len() != <$t>::BYTES {
            return None;
        }
    };
}

/// A warehouse: `ytd` first (Payment patches it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warehouse {
    pub ytd_cents: i64,
    pub tax: u32,
    pub name: [u8; 10],
    pub address: Address,
}

impl Warehouse {
    pub const BYTES: usize = 8 + 4 + 10 + Address::BYTES;
    pub const YTD_OFFSET: usize = 0;
    pub fn encode(&self) -> Vec<u8> {
        let o = Out::with_capacity(Self::BYTES).i64(self.ytd_cents).u32(self.tax).bytes(&self.name);
        self.address.put(o).done(Self::BYTES)
    }
    pub fn decode(b: &[u8]) -> Option<Warehouse> {
        row_len_check!(Self, b);
        let mut g = Get::new(b);
        Some(Warehouse { ytd_cents: g.i64(), tax: g.u32(), name: g.take(), address: Address::get(&mut g) })
    }
}

/// A district: `ytd` (Payment) and `next_o_id` (New-Order) first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct District {
    pub ytd_cents: i64,
    pub next_o_id: u32,
    pub tax: u32,
    pub name: [u8; 10],
    pub address: Address,
}

impl District {
    pub const BYTES: usize = 8 + 4 + 4 + 10 + Address::BYTES;
    pub const YTD_OFFSET: usize = 0;
    pub const NEXT_O_ID_OFFSET: usize = 8;
    pub fn encode(&self) -> Vec<u8> {
        let o = Out::with_capacity(Self::BYTES).i64(self.ytd_cents).u32(self.next_o_id).u32(self.tax).bytes(&self.name);
        self.address.put(o).done(Self::BYTES)
    }
    pub fn decode(b: &[u8]) -> Option<District> {
        row_len_check!(Self, b);
        let mut g = Get::new(b);
        Some(District {
            ytd_cents: g.i64(),
            next_o_id: g.u32(),
            tax: g.u32(),
            name: g.take(),
            address: Address::get(&mut g),
        })
    }
}

/// Length of a customer's `data` field.
pub const CUSTOMER_DATA_BYTES: usize = 500;

/// A customer: the fields Payment and Delivery change first (bytes 0..24).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Customer {
    pub balance_cents: i64,
    pub ytd_payment_cents: i64,
    pub payment_cnt: u32,
    pub delivery_cnt: u32,
    pub discount: u32,
    pub credit_lim_cents: i64,
    /// `GC` (good) or `BC` (bad credit).
    pub credit: [u8; 2],
    pub first: [u8; 16],
    pub middle: [u8; 2],
    pub last: [u8; 16],
    pub address: Address,
    pub phone: [u8; 16],
    pub since: u64,
    pub data: [u8; CUSTOMER_DATA_BYTES],
}

impl Customer {
    pub const BYTES: usize = 8 + 8 + 4 + 4 + 4 + 8 + 2 + 16 + 2 + 16 + Address::BYTES + 16 + 8 + CUSTOMER_DATA_BYTES;
    /// Balance, year-to-date payment, payment count, delivery count: bytes 0..24.
    pub const COUNTERS_OFFSET: usize = 0;
    pub const COUNTERS_BYTES: usize = 24;
    pub const DATA_OFFSET: usize = Self::BYTES - CUSTOMER_DATA_BYTES;
    pub fn encode(&self) -> Vec<u8> {
        let o = Out::with_capacity(Self::BYTES).bytes(&self.counters());
        let o = o.u32(self.discount).i64(self.credit_lim_cents).bytes(&self.credit).bytes(&self.first);
        let o = o.bytes(&self.middle).bytes(&self.last);
        self.address.put(o).bytes(&self.phone).u64(self.since).bytes(&self.data).done(Self::BYTES)
    }
    /// Bytes 0..24 as stored: what Payment and Delivery patch.
    pub fn counters(&self) -> [u8; Self::COUNTERS_BYTES] {
        let v = Out::with_capacity(Self::COUNTERS_BYTES)
            .i64(self.balance_cents)
            .i64(self.ytd_payment_cents)
            .u32(self.payment_cnt)
            .u32(self.delivery_cnt)
            .done(Self::COUNTERS_BYTES);
        v.try_into().expect("24 bytes")
    }
    pub fn decode(b: &[u8]) -> Option<Customer> {
        row_len_check!(Self, b);
        let mut g = Get::new(b);
        Some(Customer {
            balance_cents: g.i64(),
            ytd_payment_cents: g.i64(),
            payment_cnt: g.u32(),
            delivery_cnt: g.u32(),
            discount: g.u32(),
            credit_lim_cents: g.i64(),
            credit: g.take(),
            first: g.take(),
            middle: g.take(),
            last: g.take(),
            address: Address::get(&mut g),
            phone: g.take(),
            since: g.u64(),
            data: g.take(),
        })
    }
}

/// A history row (the table has no primary key; its tree key adds a unique number).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct History {
    pub c_id: u32,
    pub c_d_id: u8,
    pub c_w_id: u32,
    pub d_id: u8,
    pub w_id: u32,
    pub date: u64,
    pub amount_cents: i64,
    pub data: [u8; 24],
}

impl History {
    pub const BYTES: usize = 4 + 1 + 4 + 1 + 4 + 8 + 8 + 24;
    pub fn encode(&self) -> Vec<u8> {
        Out::with_capacity(Self::BYTES)
            .u32(self.c_id)
            .u8(self.c_d_id)
            .u32(self.c_w_id)
            .u8(self.d_id)
            .u32(self.w_id)
            .u64(self.date)
            .i64(self.amount_cents)
            .bytes(&self.data)
            .done(Self::BYTES)
    }
    pub fn decode(b: &[u8]) -> Option<History> {
        row_len_check!(Self, b);
        let mut g = Get::new(b);
        Some(History {
            c_id: g.u32(),
            c_d_id: g.u8(),
            c_w_id: g.u32(),
            d_id: g.u8(),
            w_id: g.u32(),
            date: g.u64(),
            amount_cents: g.i64(),
            data: g.take(),
        })
    }
}

/// An order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Order {
    pub c_id: u32,
    pub entry_d: u64,
    /// 0: not delivered yet (the specification's null).
    pub carrier_id: u8,
    pub ol_cnt: u8,
    pub all_local: u8,
}

impl Order {
    pub const BYTES: usize = 4 + 8 + 1 + 1 + 1;
    pub const CARRIER_OFFSET: usize = 12;
    pub fn encode(&self) -> Vec<u8> {
        Out::with_capacity(Self::BYTES)
            .u32(self.c_id)
            .u64(self.entry_d)
            .u8(self.carrier_id)
            .u8(self.ol_cnt)
            .u8(self.all_local)
            .done(Self::BYTES)
    }
    pub fn decode(b: &[u8]) -> Option<Order> {
        row_len_check!(Self, b);
        let mut g = Get::new(b);
        Some(Order { c_id: g.u32(), entry_d: g.u64(), carrier_id: g.u8(), ol_cnt: g.u8(), all_local: g.u8() })
    }
}

/// The value of a `new_order` row and of the index entries: the key says everything.
pub const MARKER: &[u8] = &[1];

/// An order line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderLine {
    pub i_id: u32,
    pub supply_w_id: u32,
    /// 0: not delivered yet (null).
    pub delivery_d: u64,
    pub quantity: u8,
    pub amount_cents: i64,
    pub dist_info: [u8; 24],
}

impl OrderLine {
    pub const BYTES: usize = 4 + 4 + 8 + 1 + 8 + 24;
    pub const DELIVERY_D_OFFSET: usize = 8;
    pub const AMOUNT_OFFSET: usize = 17;
    pub fn encode(&self) -> Vec<u8> {
        Out::with_capacity(Self::BYTES)
            .u32(self.i_id)
            .u32(self.supply_w_id)
            .u64(self.delivery_d)
            .u8(self.quantity)
            .i64(self.amount_cents)
            .bytes(&self.dist_info)
            .done(Self::BYTES)
    }
    pub fn decode(b: &[u8]) -> Option<OrderLine> {
        row_len_check!(Self, b);
        let mut g = Get::new(b);
        Some(OrderLine {
            i_id: g.u32(),
            supply_w_id: g.u32(),
            delivery_d: g.u64(),
            quantity: g.u8(),
            amount_cents: g.i64(),
            dist_info: g.take(),
        })
    }
}

/// An item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    pub im_id: u32,
    pub price_cents: i64,
    pub name: [u8; 24],
    pub data: [u8; 50],
}

impl Item {
    pub const BYTES: usize = 4 + 8 + 24 + 50;
    pub fn encode(&self) -> Vec<u8> {
        Out::with_capacity(Self::BYTES)
            .u32(self.im_id)
            .i64(self.price_cents)
            .bytes(&self.name)
            .bytes(&self.data)
            .done(Self::BYTES)
    }
    pub fn decode(b: &[u8]) -> Option<Item> {
        row_len_check!(Self, b);
        let mut g = Get::new(b);
        Some(Item { im_id: g.u32(), price_cents: g.i64(), name: g.take(), data: g.take() })
    }
}

/// A stock row: quantity, year-to-date, order and remote counts first (New-Order
/// patches bytes 0..12).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stock {
    pub quantity: i32,
    pub ytd: u32,
    pub order_cnt: u16,
    pub remote_cnt: u16,
    pub dist: [[u8; 24]; 10],
    pub data: [u8; 50],
}

impl Stock {
    pub const BYTES: usize = 4 + 4 + 2 + 2 + 240 + 50;
    pub const COUNTERS_BYTES: usize = 12;
    pub fn encode(&self) -> Vec<u8> {
        let mut o = Out::with_capacity(Self::BYTES).bytes(&self.counters());
        for d in &self.dist {
            o = o.bytes(d);
        }
        o.bytes(&self.data).done(Self::BYTES)
    }
    /// Bytes 0..12 as stored: what New-Order patches.
    pub fn counters(&self) -> [u8; Self::COUNTERS_BYTES] {
        let v = Out::with_capacity(Self::COUNTERS_BYTES)
            .i32(self.quantity)
            .u32(self.ytd)
            .u16(self.order_cnt)
            .u16(self.remote_cnt)
            .done(Self::COUNTERS_BYTES);
        v.try_into().expect("12 bytes")
    }
    pub fn decode(b: &[u8]) -> Option<Stock> {
        row_len_check!(Self, b);
        let mut g = Get::new(b);
        Some(Stock {
            quantity: g.i32(),
            ytd: g.u32(),
            order_cnt: g.u16(),
            remote_cnt: g.u16(),
            dist: std::array::from_fn(|_| g.take()),
            data: g.take(),
        })
    }
}

/// Reads a `u32` at `offset` of a row (for callers that look at one field).
pub fn u32_at(b: &[u8], offset: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(offset..offset + 4)?.try_into().ok()?))
}

/// Reads an `i64` at `offset` of a row.
pub fn i64_at(b: &[u8], offset: usize) -> Option<i64> {
    Some(i64::from_le_bytes(b.get(offset..offset + 8)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr() -> Address {
        Address { street_1: [b'a'; 20], street_2: [b'b'; 20], city: [b'c'; 20], state: *b"ST", zip: *b"123411111" }
    }

    #[test]
    fn rows_round_trip_and_have_their_sizes() {
        let c = Customer {
            balance_cents: -1000,
            ytd_payment_cents: 1000,
            payment_cnt: 1,
            delivery_cnt: 2,
            discount: 4999,
            credit_lim_cents: 5_000_000,
            credit: *b"BC",
            first: [b'f'; 16],
            middle: *b"OE",
            last: [b'l'; 16],
            address: addr(),
            phone: [b'9'; 16],
            since: 77,
            data: [b'd'; CUSTOMER_DATA_BYTES],
        };
        let b = c.encode();
        assert_eq!(b.len(), Customer::BYTES);
        assert_eq!(Customer::decode(&b), Some(c.clone()));
        assert_eq!(&b[..24], &c.counters());
        assert_eq!(&b[Customer::DATA_OFFSET..], &c.data);
        assert_eq!(Customer::decode(&b[1..]), None);
        let s = Stock { quantity: -5, ytd: 9, order_cnt: 3, remote_cnt: 1, dist: [[b'x'; 24]; 10], data: [b'y'; 50] };
        assert_eq!(Stock::decode(&s.encode()), Some(s.clone()));
        assert_eq!(s.encode().len(), 302);
        let d = District { ytd_cents: 1, next_o_id: 3001, tax: 7, name: [b'n'; 10], address: addr() };
        assert_eq!(u32_at(&d.encode(), District::NEXT_O_ID_OFFSET), Some(3001));
        assert_eq!(District::decode(&d.encode()), Some(d));
        let ol =
            OrderLine { i_id: 5, supply_w_id: 2, delivery_d: 0, quantity: 5, amount_cents: 999, dist_info: [b'z'; 24] };
        assert_eq!(i64_at(&ol.encode(), OrderLine::AMOUNT_OFFSET), Some(999));
        assert_eq!(OrderLine::decode(&ol.encode()), Some(ol));
        let o = Order { c_id: 1, entry_d: 2, carrier_id: 3, ol_cnt: 15, all_local: 1 };
        assert_eq!(o.encode()[Order::CARRIER_OFFSET], 3);
        assert_eq!(Order::decode(&o.encode()), Some(o));
    }
}
