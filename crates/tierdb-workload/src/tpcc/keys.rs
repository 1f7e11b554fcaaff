//! Order-preserving key encodings of the TPC-C tables and secondary indexes.
//!
//! Every key is a concatenation of fixed-width big-endian unsigned integers and
//! zero-padded fixed-width strings, so byte order equals the order of the composite key
//! (warehouse, district, …) field by field: a range scan over a prefix visits one
//! warehouse, one district, one order in key order. Strings never contain a zero byte
//! (the generators produce letters and digits), so zero padding sorts a shorter name
//! first, as SQL's `ORDER BY` does.
//!
//! | tree | key | bytes |
//! |---|---|---|
//! | `warehouse` | w u32 | 4 |
//! | `district` | w u32, d u8 | 5 |
//! | `customer` | w u32, d u8, c u32 | 9 |
//! | `customer_name` | w u32, d u8, last `[16]`, first `[16]`, c u32 | 41 |
//! | `history` | w u32, d u8, c u32, unique u64 | 17 |
//! | `new_order` | w u32, d u8, o u32 | 9 |
//! | `order` | w u32, d u8, o u32 | 9 |
//! | `order_customer` | w u32, d u8, c u32, o u32 | 13 |
//! | `order_line` | w u32, d u8, o u32, number u8 | 10 |
//! | `item` | i u32 | 4 |
//! | `stock` | w u32, i u32 | 8 |

/// Width of a last or first name in a key (and in a row): the specification's 16.
pub const NAME_BYTES: usize = 16;

/// Writes big-endian fields into a fixed array.
struct Put<const N: usize> {
    buf: [u8; N],
    at: usize,
}

impl<const N: usize> Put<N> {
    fn new() -> Self {
        Put { buf: [0; N], at: 0 }
    }
    fn u8(mut self, v: u8) -> Self {
        self.buf[self.at] = v;
        self.at += 1;
        self
    }
    fn u32(mut self, v: u32) -> Self {
        self.buf[self.at..self.at + 4].copy_from_slice(&v.to_be_bytes());
        self.at += 4;
        self
    }
    fn u64(mut self, v: u64) -> Self {
        self.buf[self.at..self.at + 8].copy_from_slice(&v.to_be_bytes());
        self.at += 8;
        self
    }
    fn name(mut self, s: &[u8; NAME_BYTES]) -> Self {
        self.buf[self.at..self.at + NAME_BYTES].copy_from_slice(s);
        self.at += NAME_BYTES;
        self
    }
    fn done(self) -> [u8; N] {
        debug_assert_eq!(self.at, N, "a key fills its array");
        self.buf
    }
}

/// The `warehouse` key of warehouse `w`.
pub fn warehouse(w: u32) -> [u8; 4] {
    Put::new().u32(w).done()
}

/// The `district` key of district `d` of warehouse `w`; also the prefix of the keys of
/// the district's customers, history, orders, new orders, order lines and index
/// entries.
pub fn district(w: u32, d: u8) -> [u8; 5] {
    Put::new().u32(w).u8(d).done()
}

/// The `customer` key of customer `c` of district (w, d).
pub fn customer(w: u32, d: u8, c: u32) -> [u8; 9] {
    Put::new().u32(w).u8(d).u32(c).done()
}

/// The `customer_name` index key of customer `c` of district (w, d) named `first`
/// `last`: a district's customers by last name, then first name.
pub fn customer_name(w: u32, d: u8, last: &[u8; NAME_BYTES], first: &[u8; NAME_BYTES], c: u32) -> [u8; 41] {
    Put::new().u32(w).u8(d).name(last).name(first).u32(c).done()
}

/// The prefix of every `customer_name` entry of `last` in district (w, d).
pub fn customer_name_prefix(w: u32, d: u8, last: &[u8; NAME_BYTES]) -> [u8; 21] {
    Put::new().u32(w).u8(d).name(last).done()
}

/// The customer id of a `customer_name` key.
pub fn customer_name_id(key: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(key.get(37..41)?.try_into().ok()?))
}

/// The `history` key of a payment by customer `c` to district (w, d); `unique` tells
/// the customer's payments apart (0 for the loaded one).
pub fn history(w: u32, d: u8, c: u32, unique: u64) -> [u8; 17] {
    Put::new().u32(w).u8(d).u32(c).u64(unique).done()
}

/// The `new_order` key of order `o` of district (w, d).
pub fn new_order(w: u32, d: u8, o: u32) -> [u8; 9] {
    Put::new().u32(w).u8(d).u32(o).done()
}

/// The `order` key of order `o` of district (w, d).
pub fn order(w: u32, d: u8, o: u32) -> [u8; 9] {
    Put::new().u32(w).u8(d).u32(o).done()
}

/// The order id of a `new_order` or `order` key.
pub fn order_id(key: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(key.get(5..9)?.try_into().ok()?))
}

/// The `order_customer` index key of order `o` of customer `c` in district (w, d): a
/// customer's orders in order-id order, so the last is the latest.
pub fn order_customer(w: u32, d: u8, c: u32, o: u32) -> [u8; 13] {
    Put::new().u32(w).u8(d).u32(c).u32(o).done()
}

/// The order id of an `order_customer` key.
pub fn order_customer_order(key: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(key.get(9..13)?.try_into().ok()?))
}

/// The `order_line` key of line `number` (1..=15) of order `o` of district (w, d);
/// number 0 starts a scan over the order's lines.
pub fn order_line(w: u32, d: u8, o: u32, number: u8) -> [u8; 10] {
    Put::new().u32(w).u8(d).u32(o).u8(number).done()
}

/// The `item` key of item `i`.
pub fn item(i: u32) -> [u8; 4] {
    Put::new().u32(i).done()
}

/// The `stock` key of item `i` in warehouse `w`.
pub fn stock(w: u32, i: u32) -> [u8; 8] {
    Put::new().u32(w).u32(i).done()
}

/// A name as its fixed-width, zero-padded field (longer names are cut).
pub fn name_field(s: &str) -> [u8; NAME_BYTES] {
    let mut f = [0u8; NAME_BYTES];
    let n = s.len().min(NAME_BYTES);
    f[..n].copy_from_slice(&s.as_bytes()[..n]);
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_order_is_field_order() {
        // Each later field breaks ties only: compare across every field boundary.
        assert!(customer(1, 9, 70_000) < customer(1, 10, 1));
        assert!(customer(1, 10, 3000) < customer(2, 1, 1));
        assert!(order_line(3, 2, 255, 15) < order_line(3, 2, 256, 1));
        assert!(order_line(3, 2, 0x0100_0000, 1) > order_line(3, 2, 0x00FF_FFFF, 15));
        assert!(stock(1, 100_000) < stock(2, 1));
        let (a, b) = (name_field("ABLE"), name_field("ABLEABLE"));
        assert!(customer_name(1, 1, &a, &name_field("Z"), 9) < customer_name(1, 1, &b, &name_field("A"), 1));
        assert!(customer_name(1, 1, &a, &name_field("A"), 9) < customer_name(1, 1, &a, &name_field("AB"), 1));
        assert!(history(1, 1, 1, u64::MAX) < history(1, 1, 2, 0));
    }

    #[test]
    fn ids_decode_from_keys() {
        assert_eq!(order_id(&new_order(7, 3, 2101)), Some(2101));
        assert_eq!(order_customer_order(&order_customer(7, 3, 99, 3001)), Some(3001));
        let k = customer_name(1, 2, &name_field("BARBAR"), &name_field("x"), 2999);
        assert_eq!(customer_name_id(&k), Some(2999));
        assert!(k.starts_with(&customer_name_prefix(1, 2, &name_field("BARBAR"))));
        assert_eq!(order_id(b"short"), None);
    }
}
