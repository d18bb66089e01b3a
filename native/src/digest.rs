//! The WARC digests: SHA-1 in Base32, as harvestman.fetch.content.sha1_base32 writes them.

use sha1::{Digest, Sha1};

const BASE32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// `sha1:` and the Base32 (RFC 4648, no padding needed: 160 bits are 32 digits) of the SHA-1 of
/// the pieces, hashed as one string.
pub fn sha1_base32(pieces: &[&[u8]]) -> String {
    let mut hash = Sha1::new();
    for piece in pieces {
        hash.update(piece);
    }
    let digest = hash.finalize();
    let mut out = String::with_capacity(37);
    out.push_str("sha1:");
    let mut acc: u64 = 0;
    let mut bits = 0;
    for &byte in digest.iter() {
        acc = (acc << 8) | u64::from(byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(BASE32[((acc >> bits) & 31) as usize]));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::sha1_base32;

    #[test]
    fn known_digests() {
        // The empty string's: the payload digest of every GET request record.
        assert_eq!(sha1_base32(&[]), "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
        // Pieces hash as their concatenation.
        assert_eq!(sha1_base32(&[b"ab", b"c"]), sha1_base32(&[b"abc"]));
        assert_eq!(
            sha1_base32(&[b"abc"]),
            "sha1:VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5"
        );
    }
}
