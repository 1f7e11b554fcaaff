//! The specification's random functions (TPC-C §2.1.6, §4.3.2): uniform integers,
//! NURand, random strings, zip codes and the syllable last names, from one seeded
//! generator per loader task or worker.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{Rng, SeedableRng};

use crate::dist::{derive_seed, uniform_below};

/// The ten syllables last names are made of (§4.3.2.3).
const SYLLABLES: [&str; 10] = ["BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"];

/// NURand's `A` for customer last names (§2.1.6).
pub const A_C_LAST: u32 = 255;
/// NURand's `A` for customer ids.
pub const A_C_ID: u32 = 1023;
/// NURand's `A` for item ids.
pub const A_OL_I_ID: u32 = 8191;

/// A seeded generator of the specification's random values.
pub struct TpccRng(Xoshiro256PlusPlus);

impl TpccRng {
    /// The generator of stream `stream` of the run seeded `seed`.
    pub fn new(seed: u64, stream: u64) -> TpccRng {
        TpccRng(Xoshiro256PlusPlus::seed_from_u64(derive_seed(seed, stream)))
    }

    /// A uniform integer in `lo..=hi`.
    pub fn uniform(&mut self, lo: u64, hi: u64) -> u64 {
        debug_assert!(lo <= hi, "uniform({lo}, {hi})");
        lo + uniform_below(&mut self.0, hi - lo + 1)
    }

    /// A uniform integer in `lo..=hi`, as a `u32`.
    pub fn uniform_u32(&mut self, lo: u32, hi: u32) -> u32 {
        self.uniform(u64::from(lo), u64::from(hi)) as u32
    }

    /// True with probability `percent` / 100.
    pub fn percent(&mut self, percent: u32) -> bool {
        self.uniform(1, 100) <= u64::from(percent)
    }

    /// NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y − x + 1)) + x.
    pub fn nurand(&mut self, a: u32, x: u32, y: u32, c: u32) -> u32 {
        debug_assert!(x <= y);
        let r = (self.uniform_u32(0, a) | self.uniform_u32(x, y)) as u64;
        ((r + u64::from(c)) % (u64::from(y - x) + 1)) as u32 + x
    }

    /// A random alphanumeric string of `lo..=hi` characters, zero-padded to `N`.
    pub fn astring<const N: usize>(&mut self, lo: usize, hi: usize) -> [u8; N] {
        const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        debug_assert!(lo <= hi && hi <= N);
        let n = self.uniform(lo as u64, hi as u64) as usize;
        let mut out = [0u8; N];
        for b in &mut out[..n] {
            *b = CHARS[uniform_below(&mut self.0, CHARS.len() as u64) as usize];
        }
        out
    }

    /// A random numeric string of `lo..=hi` digits, zero-padded to `N`.
    pub fn nstring<const N: usize>(&mut self, lo: usize, hi: usize) -> [u8; N] {
        let n = self.uniform(lo as u64, hi as u64) as usize;
        let mut out = [0u8; N];
        for b in &mut out[..n] {
            *b = b'0' + uniform_below(&mut self.0, 10) as u8;
        }
        out
    }

    /// A data string of `lo..=hi` characters, 10% of which carry `ORIGINAL` at a random
    /// place (items and stock, §4.3.3.1).
    pub fn data_string<const N: usize>(&mut self, lo: usize, hi: usize) -> [u8; N] {
        let mut s: [u8; N] = self.astring(lo, hi);
        if self.percent(10) {
            let len = s.iter().position(|&b| b == 0).unwrap_or(N);
            let at = self.uniform(0, (len - 8) as u64) as usize;
            s[at..at + 8].copy_from_slice(b"ORIGINAL");
        }
        s
    }

    /// A zip code: 4 random digits and `11111`.
    pub fn zip(&mut self) -> [u8; 9] {
        let mut z: [u8; 9] = self.nstring(4, 4);
        z[4..].copy_from_slice(b"11111");
        z
    }

    /// 64 uniformly random bits from the same stream.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
}

/// The last name of number `n` in `0..=999`: its three digits as syllables.
pub fn last_name(n: u32) -> String {
    debug_assert!(n < 1000, "last name number {n}");
    let n = n as usize;
    [SYLLABLES[n / 100], SYLLABLES[n / 10 % 10], SYLLABLES[n % 10]].concat()
}

/// NURand's run-time constants `C` (§2.1.6.1): one per field, `C_LAST` of the run
/// chosen against the load's so that their distance is in 65..=119 and not 96 or 112.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct NurandC {
    /// `C` for customer last names, 0..=[`A_C_LAST`].
    pub c_last: u32,
    /// `C` for customer ids, 0..=[`A_C_ID`].
    pub c_id: u32,
    /// `C` for item ids, 0..=[`A_OL_I_ID`].
    pub ol_i_id: u32,
}

impl NurandC {
    /// The constants the loader uses.
    pub fn for_load(seed: u64) -> NurandC {
        let mut r = TpccRng::new(seed, u64::MAX);
        NurandC {
            c_last: r.uniform_u32(0, A_C_LAST),
            c_id: r.uniform_u32(0, A_C_ID),
            ol_i_id: r.uniform_u32(0, A_OL_I_ID),
        }
    }

    /// The constants a run uses: `C_ID` and `C_OL_I_ID` as loaded, `C_LAST` at a valid
    /// distance from the load's.
    pub fn for_run(seed: u64) -> NurandC {
        let load = NurandC::for_load(seed);
        let mut r = TpccRng::new(seed, u64::MAX - 1);
        loop {
            let c = r.uniform_u32(0, A_C_LAST);
            let delta = c.abs_diff(load.c_last);
            if (65..=119).contains(&delta) && delta != 96 && delta != 112 {
                return NurandC { c_last: c, ..load };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_names_follow_the_syllables() {
        assert_eq!(last_name(0), "BARBARBAR");
        assert_eq!(last_name(371), "PRICALLYOUGHT");
        assert_eq!(last_name(999), "EINGEINGEING");
    }

    #[test]
    fn nurand_stays_in_range_and_is_skewed() {
        let mut r = TpccRng::new(7, 0);
        let mut hits = vec![0u32; 3000];
        for _ in 0..200_000 {
            let v = r.nurand(A_C_ID, 1, 3000, 259);
            assert!((1..=3000).contains(&v));
            hits[v as usize - 1] += 1;
        }
        let max = *hits.iter().max().unwrap();
        let min = *hits.iter().min().unwrap();
        assert!(max > 4 * min.max(1), "NURand is non-uniform: max {max} min {min}");
    }

    #[test]
    fn run_constant_keeps_its_distance() {
        for seed in 0..200 {
            let (l, r) = (NurandC::for_load(seed), NurandC::for_run(seed));
            let d = l.c_last.abs_diff(r.c_last);
            assert!((65..=119).contains(&d) && d != 96 && d != 112, "seed {seed}: {l:?} {r:?}");
            assert_eq!((l.c_id, l.ol_i_id), (r.c_id, r.ol_i_id));
        }
    }

    #[test]
    fn strings_have_their_lengths() {
        let mut r = TpccRng::new(1, 2);
        for _ in 0..1000 {
            let s: [u8; 24] = r.astring(14, 24);
            let n = s.iter().position(|&b| b == 0).unwrap_or(24);
            assert!((14..=24).contains(&n) && s[n..].iter().all(|&b| b == 0));
            let d: [u8; 50] = r.data_string(26, 50);
            assert!(d.iter().take(26).all(|&b| b != 0));
        }
        assert_eq!(&r.zip()[4..], b"11111");
    }
}
