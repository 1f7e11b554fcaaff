//! Shared by the database power-loss tests (`db_transactions`, `db_without_ssd`,
//! `nvsql`): one random operation of a transaction on tree `t`, mirrored in a model.

use std::collections::BTreeMap;

use rand::prelude::*;
use tierdb::db::{DbStore, Txn};

/// Key → value: what the tree holds, or will hold once the transaction commits.
pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// One of 3,000 keys: a put (60%), a patch of part of the value (20%; logged as the
/// bytes written and those they replace), or a delete (20%), applied to `t` and to
/// `staged`; the engine's answers are checked against the model.
pub fn random_op<S: DbStore>(t: &mut Txn<'_, S>, rng: &mut impl Rng, staged: &mut Model) {
    let k = format!("key{:05}", rng.random_range(0..3000)).into_bytes();
    match rng.random_range(0..10) {
        0..6 => {
            let v = vec![rng.random::<u8>(); rng.random_range(10..300)];
            t.put("t", &k, &v).unwrap();
            staged.insert(k, v);
        }
        6..8 => match staged.get_mut(&k) {
            Some(v) => {
                let offset = rng.random_range(0..v.len());
                let bytes: Vec<u8> = (0..rng.random_range(1..=v.len() - offset)).map(|_| rng.random()).collect();
                assert!(t.update_in_place("t", &k, offset, &bytes).unwrap());
                v[offset..offset + bytes.len()].copy_from_slice(&bytes);
            }
            None => assert!(!t.update_in_place("t", &k, 0, b"x").unwrap()),
        },
        _ => {
            let had = staged.remove(&k).is_some();
            assert_eq!(t.delete("t", &k).unwrap(), had);
        }
    }
}
