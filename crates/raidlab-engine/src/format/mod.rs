//! The engine's on-disk formats, each record closed by a CRC32C (the `crc32c` crate): the superblock at the start of
//! every member ([`superblock`]), the write journal ([`journal`]) and md's partial parity
//! log ([`ppl`]). The write-intent bitmap is a plain bit array whose place the
//! superblock declares; its behaviour lives with the array (`array::bitmap`). The cache
//! tier's metadata is the cache's own (`cache::meta`).

pub mod journal;
pub mod ppl;
pub mod probe;
pub mod superblock;

#[cfg(test)]
mod tests {
    use crc32c::crc32c;

    /// CRC32C one bit at a time (reflected polynomial 0x82F63B78), the definition the
    /// formats were written with: the reference the crate must match.
    fn crc32c_bitwise(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = (crc >> 1) ^ (0x82F6_3B78 & (crc & 1).wrapping_neg());
            }
        }
        !crc
    }

    #[test]
    fn matches_the_rfc_3720_test_vectors() {
        assert_eq!(crc32c(b""), 0);
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(&[0u8; 32]), 0x8A91_36AA);
        assert_eq!(crc32c(&[0xFFu8; 32]), 0x62A8_AB43);
        let ascending: Vec<u8> = (0..32).collect();
        assert_eq!(crc32c(&ascending), 0x46DD_794E);
    }

    #[test]
    fn the_crate_agrees_with_the_definition_at_every_length_and_alignment() {
        let bytes: Vec<u8> = (0..1000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for start in 0..9 {
            for len in [0, 1, 7, 8, 9, 63, 64, 65, 500, 991 - start] {
                let b = &bytes[start..start + len];
                assert_eq!(crc32c(b), crc32c_bitwise(b), "start {start} len {len}");
            }
        }
    }
}
