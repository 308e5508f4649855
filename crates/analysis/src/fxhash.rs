//! A small, fast, non-cryptographic hasher for the aggregation maps (keys are our own
//! integers, so HashDoS resistance buys nothing and SipHash costs a lot per sample).

use std::hash::{BuildHasherDefault, Hasher};

/// A 64-bit hash of six words: three independent folded 64x64->128 multiplies (each word
/// first xored with its own constant), so the multiplies overlap instead of forming a chain
/// of six. For the aggregation's own integer keys; distinct keys collide with probability
/// about 2^-64 (equal results for hostile input only make folding less compact).
#[inline]
pub fn hash_words6(w: [u64; 6]) -> u64 {
    const K: [u64; 6] = [
        0x243f_6a88_85a3_08d3,
        0x1319_8a2e_0370_7344,
        0xa409_3822_299f_31d0,
        0x082e_fa98_ec4e_6c89,
        0x4528_21e6_38d0_1377,
        0xbe54_66cf_34e9_0c6c,
    ];
    let fold = |a: u64, b: u64| {
        let p = u128::from(a) * u128::from(b);
        (p as u64) ^ ((p >> 64) as u64)
    };
    fold(w[0] ^ K[0], w[1] ^ K[1])
        ^ fold(w[2] ^ K[2], w[3] ^ K[3]).rotate_left(21)
        ^ fold(w[4] ^ K[4], w[5] ^ K[5]).rotate_left(42)
}

/// [`hash_words6`] for four words; its low bits are as well mixed as its high ones (a
/// table index).
#[inline]
pub fn hash_words4(w: [u64; 4]) -> u64 {
    let fold = |a: u64, b: u64| {
        let p = u128::from(a) * u128::from(b);
        (p as u64) ^ ((p >> 64) as u64)
    };
    let h = fold(w[0] ^ 0x243f_6a88_85a3_08d3, w[1] ^ 0x1319_8a2e_0370_7344)
        ^ fold(w[2] ^ 0xa409_3822_299f_31d0, w[3] ^ 0x082e_fa98_ec4e_6c89).rotate_left(29);
    fold(h, 0x4528_21e6_38d0_1377)
}

/// Multiply-rotate hasher in the style of rustc's FxHasher.
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            self.add(u64::from_le_bytes(b));
        }
        for &b in chunks.remainder() {
            self.add(u64::from(b));
        }
    }
    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }
    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }
    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        // Multiplication only carries low bits upwards: without a final mix, keys that
        // differ in high bits only (addresses) share hashbrown's low-bit bucket index.
        // murmur3's fmix64 spreads every bit over the whole word.
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

/// `HashMap` with [`FxHasher`].
pub type FxHashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<FxHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, BuildHasherDefault};

    #[test]
    fn test_high_bit_only_differences_spread_over_low_bits() {
        let b = BuildHasherDefault::<FxHasher>::default();
        let mut low: std::collections::HashSet<u64> = std::collections::HashSet::new();
        for i in 0..1024u64 {
            let key: [u64; 2] = [7, 0x7f00_0000_0000 + (i << 32)];
            low.insert(b.hash_one(key) & 0xfff);
        }
        // 1024 keys over 4096 low-bit buckets: nearly all distinct when well mixed.
        assert!(low.len() > 800, "only {} distinct buckets", low.len());
    }
}
