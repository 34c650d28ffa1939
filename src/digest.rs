//! The two digests the crate spells out by hand: lowercase hex of bytes ([`hex`], the
//! form every content hash is written in) and 64-bit FNV-1a ([`fnv1a`], the cheap hash
//! seeds and feature buckets are drawn from). A leaf, so every layer can use both.
//!
//! Both outputs are on-disk data: hex strings name cache entries, fingerprints and run
//! identities, and FNV values seed episodes and place words in the lexical embedding, so
//! neither may change.

/// `bytes` as lowercase hex, two digits a byte, in order.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        write!(out, "{b:02x}").expect("writing to a String cannot fail");
    }
    out
}

/// 64-bit FNV-1a of `bytes` (offset basis `0xcbf29ce484222325`, prime `0x100000001b3`).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_lowercase_two_digits_a_byte() {
        assert_eq!(hex(&[]), "");
        assert_eq!(hex(&[0x00, 0x0a, 0xff, 0x5c]), "000aff5c");
    }

    #[test]
    fn fnv1a_matches_the_published_vectors() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }
}
