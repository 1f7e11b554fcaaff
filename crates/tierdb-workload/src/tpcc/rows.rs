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
    /// First street line, 10..=20 characters at load, zero-padded.
    pub street_1: [u8; 20],
    /// Second street line, 10..=20 characters at load, zero-padded.
    pub street_2: [u8; 20],
    /// City, 10..=20 characters at load, zero-padded.
    pub city: [u8; 20],
    /// State, two characters.
    pub state: [u8; 2],
    /// Zip code: four random digits and `11111`.
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
    /// Payments received this year, cents (300,000.00 at load).
    pub ytd_cents: i64,
    /// Sales tax, ten-thousandths: 0..=2000 (0–20%).
    pub tax: u32,
    /// Name, 6..=10 characters at load, zero-padded.
    pub name: [u8; 10],
    /// Address.
    pub address: Address,
}

impl Warehouse {
    /// Length of an encoded row: 93 bytes.
    pub const BYTES: usize = 8 + 4 + 10 + Address::BYTES;
    /// Offset of `ytd_cents` (an `i64`) in the row.
    pub const YTD_OFFSET: usize = 0;
    /// The row as stored: [`Warehouse::BYTES`] bytes.
    pub fn encode(&self) -> Vec<u8> {
        let o = Out::with_capacity(Self::BYTES).i64(self.ytd_cents).u32(self.tax).bytes(&self.name);
        self.address.put(o).done(Self::BYTES)
    }
    /// The row stored in `b`; `None` unless `b` is [`Warehouse::BYTES`] long.
    pub fn decode(b: &[u8]) -> Option<Warehouse> {
        row_len_check!(Self, b);
        let mut g = Get::new(b);
        Some(Warehouse { ytd_cents: g.i64(), tax: g.u32(), name: g.take(), address: Address::get(&mut g) })
    }
}

/// A district: `ytd` (Payment) and `next_o_id` (New-Order) first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct District {
    /// Payments received this year, cents (30,000.00 at load).
    pub ytd_cents: i64,
    /// The id the district's next order takes (orders 1..next_o_id exist).
    pub next_o_id: u32,
    /// Sales tax, ten-thousandths: 0..=2000 (0–20%).
    pub tax: u32,
    /// Name, 6..=10 characters at load, zero-padded.
    pub name: [u8; 10],
    /// Address.
    pub address: Address,
}

impl District {
    /// Length of an encoded row: 97 bytes.
    pub const BYTES: usize = 8 + 4 + 4 + 10 + Address::BYTES;
    /// Offset of `ytd_cents` (an `i64`) in the row.
    pub const YTD_OFFSET: usize = 0;
    /// Offset of `next_o_id` (a `u32`) in the row.
    pub const NEXT_O_ID_OFFSET: usize = 8;
    /// The row as stored: [`District::BYTES`] bytes.
    pub fn encode(&self) -> Vec<u8> {
        let o = Out::with_capacity(Self::BYTES).i64(self.ytd_cents).u32(self.next_o_id).u32(self.tax).bytes(&self.name);
        self.address.put(o).done(Self::BYTES)
    }
    /// The row stored in `b`; `None` unless `b` is [`District::BYTES`] long.
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
    /// Balance, cents (−10.00 at load): Payment subtracts the amount paid, Delivery
    /// adds the order's total.
    pub balance_cents: i64,
    /// Payments this year, cents (10.00 at load).
    pub ytd_payment_cents: i64,
    /// Payments made (1 at load).
    pub payment_cnt: u32,
    /// Orders delivered (0 at load).
    pub delivery_cnt: u32,
    /// Discount, ten-thousandths: 0..=5000 (0–50%).
    pub discount: u32,
    /// Credit limit, cents (50,000.00).
    pub credit_lim_cents: i64,
    /// `GC` (good) or `BC` (bad credit).
    pub credit: [u8; 2],
    /// First name, 8..=16 characters at load, zero-padded.
    pub first: [u8; 16],
    /// Middle name: `OE`.
    pub middle: [u8; 2],
    /// Last name, three syllables ([`super::random::last_name`]), zero-padded.
    pub last: [u8; 16],
    /// Address.
    pub address: Address,
    /// Phone number, 16 digits.
    pub phone: [u8; 16],
    /// When the customer was added, seconds.
    pub since: u64,
    /// Free text, 300..=500 characters at load, zero-padded; Payment prepends a line
    /// for a bad-credit customer and cuts the end.
    pub data: [u8; CUSTOMER_DATA_BYTES],
}

impl Customer {
    /// Length of an encoded row: 667 bytes.
    pub const BYTES: usize = 8 + 8 + 4 + 4 + 4 + 8 + 2 + 16 + 2 + 16 + Address::BYTES + 16 + 8 + CUSTOMER_DATA_BYTES;
    /// Balance, year-to-date payment, payment count, delivery count: bytes 0..24.
    pub const COUNTERS_OFFSET: usize = 0;
    /// Length of the counters at [`Customer::COUNTERS_OFFSET`].
    pub const COUNTERS_BYTES: usize = 24;
    /// Offset of `data`: the row's last [`CUSTOMER_DATA_BYTES`] bytes.
    pub const DATA_OFFSET: usize = Self::BYTES - CUSTOMER_DATA_BYTES;
    /// The row as stored: [`Customer::BYTES`] bytes.
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
    /// The row stored in `b`; `None` unless `b` is [`Customer::BYTES`] long.
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
    /// The paying customer's id.
    pub c_id: u32,
    /// The paying customer's district.
    pub c_d_id: u8,
    /// The paying customer's warehouse.
    pub c_w_id: u32,
    /// The district paid to.
    pub d_id: u8,
    /// The warehouse paid to.
    pub w_id: u32,
    /// Payment date, seconds.
    pub date: u64,
    /// Amount paid, cents (10.00 for the loaded rows).
    pub amount_cents: i64,
    /// The warehouse's and the district's names, four spaces apart, cut to 24 bytes
    /// (random text for the loaded rows).
    pub data: [u8; 24],
}

impl History {
    /// Length of an encoded row: 54 bytes.
    pub const BYTES: usize = 4 + 1 + 4 + 1 + 4 + 8 + 8 + 24;
    /// The row as stored: [`History::BYTES`] bytes.
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
    /// The row stored in `b`; `None` unless `b` is [`History::BYTES`] long.
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
    /// The ordering customer's id (same district).
    pub c_id: u32,
    /// Entry date, seconds.
    pub entry_d: u64,
    /// 0: not delivered yet (the specification's null).
    pub carrier_id: u8,
    /// Order lines, 5..=15.
    pub ol_cnt: u8,
    /// 1 if the home warehouse supplies every line, else 0.
    pub all_local: u8,
}

impl Order {
    /// Length of an encoded row: 15 bytes.
    pub const BYTES: usize = 4 + 8 + 1 + 1 + 1;
    /// Offset of `carrier_id` (a `u8`) in the row: what Delivery patches.
    pub const CARRIER_OFFSET: usize = 12;
    /// The row as stored: [`Order::BYTES`] bytes.
    pub fn encode(&self) -> Vec<u8> {
        Out::with_capacity(Self::BYTES)
            .u32(self.c_id)
            .u64(self.entry_d)
            .u8(self.carrier_id)
            .u8(self.ol_cnt)
            .u8(self.all_local)
            .done(Self::BYTES)
    }
    /// The row stored in `b`; `None` unless `b` is [`Order::BYTES`] long.
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
    /// The item ordered.
    pub i_id: u32,
    /// The warehouse whose stock supplies it.
    pub supply_w_id: u32,
    /// 0: not delivered yet (null).
    pub delivery_d: u64,
    /// Units ordered: 1..=10 (5 for the loaded lines).
    pub quantity: u8,
    /// Quantity times the item's price, cents (loaded lines: 0 if delivered, random
    /// if not).
    pub amount_cents: i64,
    /// The supplying stock row's text for the order's district.
    pub dist_info: [u8; 24],
}

impl OrderLine {
    /// Length of an encoded row: 49 bytes.
    pub const BYTES: usize = 4 + 4 + 8 + 1 + 8 + 24;
    /// Offset of `delivery_d` (a `u64`) in the row: what Delivery patches.
    pub const DELIVERY_D_OFFSET: usize = 8;
    /// Offset of `amount_cents` (an `i64`) in the row.
    pub const AMOUNT_OFFSET: usize = 17;
    /// The row as stored: [`OrderLine::BYTES`] bytes.
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
    /// The row stored in `b`; `None` unless `b` is [`OrderLine::BYTES`] long.
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
    /// Image id, 1..=10,000.
    pub im_id: u32,
    /// Price, cents: 100..=10,000 ($1.00 to $100.00).
    pub price_cents: i64,
    /// Name, 14..=24 characters, zero-padded.
    pub name: [u8; 24],
    /// Free text, 26..=50 characters, zero-padded; 10% of items carry `ORIGINAL`.
    pub data: [u8; 50],
}

impl Item {
    /// Length of an encoded row: 86 bytes.
    pub const BYTES: usize = 4 + 8 + 24 + 50;
    /// The row as stored: [`Item::BYTES`] bytes.
    pub fn encode(&self) -> Vec<u8> {
        Out::with_capacity(Self::BYTES)
            .u32(self.im_id)
            .i64(self.price_cents)
            .bytes(&self.name)
            .bytes(&self.data)
            .done(Self::BYTES)
    }
    /// The row stored in `b`; `None` unless `b` is [`Item::BYTES`] long.
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
    /// Units in stock, 10..=100 at load; New-Order takes the units ordered and adds 91
    /// when fewer than 10 would remain.
    pub quantity: i32,
    /// Units ordered this year.
    pub ytd: u32,
    /// Order lines this stock supplied (wraps at 2^16).
    pub order_cnt: u16,
    /// Of those, lines of orders from another warehouse (wraps at 2^16).
    pub remote_cnt: u16,
    /// One text of 24 characters per district (`S_DIST_01` to `S_DIST_10`): a
    /// New-Order line copies its district's.
    pub dist: [[u8; 24]; 10],
    /// Free text, 26..=50 characters, zero-padded; 10% carry `ORIGINAL`.
    pub data: [u8; 50],
}

impl Stock {
    /// Length of an encoded row: 302 bytes.
    pub const BYTES: usize = 4 + 4 + 2 + 2 + 240 + 50;
    /// Length of the counters at the start of the row (bytes 0..12).
    pub const COUNTERS_BYTES: usize = 12;
    /// The row as stored: [`Stock::BYTES`] bytes.
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
    /// The row stored in `b`; `None` unless `b` is [`Stock::BYTES`] long.
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
