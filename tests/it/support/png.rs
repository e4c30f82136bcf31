//! Just enough PNG to read back what a renderer drew (8-bit RGB or RGBA, not interlaced): the
//! chunks, zlib's inflate (RFC 1950/1951) and the scanline filters. The tests check pixels of
//! an exported slide as rsvg-convert rendered it, and no image crate is a dependency.

/// A decoded image: `width` x `height` pixels of `channels` bytes each, row by row.
pub(crate) struct Image {
    pub width: usize,
    pub height: usize,
    pub channels: usize,
    pub data: Vec<u8>,
}

impl Image {
    /// The RGB of the pixel at (`x`, `y`).
    pub(crate) fn rgb(&self, x: usize, y: usize) -> [u8; 3] {
        let at = (y * self.width + x) * self.channels;
        [self.data[at], self.data[at + 1], self.data[at + 2]]
    }
}

/// Decodes `png`; an error says what it does not handle.
pub(crate) fn decode(png: &[u8]) -> Result<Image, String> {
    if png.get(..8) != Some(b"\x89PNG\r\n\x1a\n".as_slice()) {
        return Err("not a PNG".into());
    }
    let (mut at, mut header, mut idat) = (8, None, Vec::new());
    while at + 8 <= png.len() {
        let len = u32::from_be_bytes([png[at], png[at + 1], png[at + 2], png[at + 3]]) as usize;
        let kind = &png[at + 4..at + 8];
        let body = png
            .get(at + 8..at + 8 + len)
            .ok_or("a chunk runs past the end")?;
        match kind {
            b"IHDR" => header = Some(body.to_vec()),
            b"IDAT" => idat.extend_from_slice(body),
            b"IEND" => break,
            _ => {}
        }
        at += 12 + len;
    }
    let h = header.ok_or("no IHDR")?;
    let word = |i: usize| u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]) as usize;
    let (width, height, depth, color, interlace) = (word(0), word(4), h[8], h[9], h[12]);
    let channels = match color {
        2 => 3,
        6 => 4,
        _ => return Err(format!("colour type {color} not handled")),
    };
    if depth != 8 || interlace != 0 {
        return Err(format!("depth {depth}, interlace {interlace} not handled"));
    }
    let raw = inflate(idat.get(2..).ok_or("no zlib header")?)?;
    let stride = width * channels;
    if raw.len() < height * (stride + 1) {
        return Err(format!("{} bytes for {width}x{height}", raw.len()));
    }
    let mut data = vec![0_u8; height * stride];
    for y in 0..height {
        let filter = raw[y * (stride + 1)];
        let line = &raw[y * (stride + 1) + 1..(y + 1) * (stride + 1)];
        for x in 0..stride {
            let a = if x >= channels {
                data[y * stride + x - channels]
            } else {
                0
            };
            let b = if y > 0 { data[(y - 1) * stride + x] } else { 0 };
            let c = if x >= channels && y > 0 {
                data[(y - 1) * stride + x - channels]
            } else {
                0
            };
            let predicted = match filter {
                0 => 0,
                1 => a,
                2 => b,
                3 => u16::midpoint(u16::from(a), u16::from(b)) as u8,
                4 => paeth(a, b, c),
                _ => return Err(format!("filter {filter} at row {y}")),
            };
            data[y * stride + x] = line[x].wrapping_add(predicted);
        }
    }
    Ok(Image {
        width,
        height,
        channels,
        data,
    })
}

fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let p = i16::from(a) + i16::from(b) - i16::from(c);
    let (pa, pb, pc) = (
        (p - i16::from(a)).abs(),
        (p - i16::from(b)).abs(),
        (p - i16::from(c)).abs(),
    );
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}

/// Reads bits least significant first, as deflate packs them.
struct Bits<'a> {
    data: &'a [u8],
    at: usize,
    bit: u32,
}

impl Bits<'_> {
    fn one(&mut self) -> Result<u32, String> {
        let byte = *self.data.get(self.at).ok_or("the stream ends early")?;
        let b = u32::from(byte >> self.bit) & 1;
        self.bit += 1;
        if self.bit == 8 {
            self.bit = 0;
            self.at += 1;
        }
        Ok(b)
    }

    fn take(&mut self, n: u32) -> Result<u32, String> {
        (0..n).try_fold(0, |v, i| Ok(v | (self.one()? << i)))
    }
}

/// A canonical Huffman code: how many codes of each length, and the symbols in code order.
struct Huffman {
    counts: [u16; 16],
    symbols: Vec<u16>,
}

impl Huffman {
    fn new(lengths: &[u8]) -> Self {
        let mut counts = [0_u16; 16];
        for &l in lengths {
            counts[usize::from(l)] += 1;
        }
        counts[0] = 0;
        let mut offsets = [0_u16; 16];
        for len in 1..16 {
            offsets[len] = offsets[len - 1] + counts[len - 1];
        }
        let mut symbols = vec![0_u16; lengths.len()];
        for (symbol, &l) in lengths.iter().enumerate() {
            if l != 0 {
                symbols[usize::from(offsets[usize::from(l)])] = symbol as u16;
                offsets[usize::from(l)] += 1;
            }
        }
        Self { counts, symbols }
    }

    fn decode(&self, bits: &mut Bits<'_>) -> Result<u16, String> {
        let (mut code, mut first, mut index) = (0_i32, 0_i32, 0_i32);
        for len in 1..16 {
            code |= i32::from(bits.one()? == 1);
            let count = i32::from(self.counts[len]);
            if code - count < first {
                return Ok(self.symbols[(index + code - first) as usize]);
            }
            index += count;
            first = (first + count) << 1;
            code <<= 1;
        }
        Err("a code longer than 15 bits".into())
    }
}

const LENGTH_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LENGTH_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
const DIST_EXTRA: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];

/// Inflates a raw deflate stream.
fn inflate(data: &[u8]) -> Result<Vec<u8>, String> {
    let mut bits = Bits {
        data,
        at: 0,
        bit: 0,
    };
    let mut out = Vec::new();
    loop {
        let last = bits.one()?;
        match bits.take(2)? {
            0 => {
                if bits.bit != 0 {
                    bits.bit = 0;
                    bits.at += 1;
                }
                let at = bits.at;
                let len = usize::from(u16::from_le_bytes([data[at], data[at + 1]]));
                out.extend_from_slice(data.get(at + 4..at + 4 + len).ok_or("stored block")?);
                bits.at = at + 4 + len;
            }
            1 => {
                let mut lengths = [8_u8; 288];
                lengths[144..256].fill(9);
                lengths[256..280].fill(7);
                let (lit, dist) = (Huffman::new(&lengths), Huffman::new(&[5; 30]));
                block(&mut bits, &mut out, &lit, &dist)?;
            }
            2 => {
                let (lit, dist) = dynamic(&mut bits)?;
                block(&mut bits, &mut out, &lit, &dist)?;
            }
            _ => return Err("block type 3".into()),
        }
        if last == 1 {
            return Ok(out);
        }
    }
}

fn dynamic(bits: &mut Bits<'_>) -> Result<(Huffman, Huffman), String> {
    const ORDER: [usize; 19] = [
        16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
    ];
    let hlit = bits.take(5)? as usize + 257;
    let hdist = bits.take(5)? as usize + 1;
    let hclen = bits.take(4)? as usize + 4;
    let mut code_lengths = [0_u8; 19];
    for &i in &ORDER[..hclen] {
        code_lengths[i] = bits.take(3)? as u8;
    }
    let code = Huffman::new(&code_lengths);
    let mut lengths = Vec::with_capacity(hlit + hdist);
    while lengths.len() < hlit + hdist {
        let (value, repeat) = match code.decode(bits)? {
            s @ 0..=15 => (s as u8, 1),
            16 => (
                *lengths.last().ok_or("repeat of nothing")?,
                3 + bits.take(2)?,
            ),
            17 => (0, 3 + bits.take(3)?),
            _ => (0, 11 + bits.take(7)?),
        };
        lengths.extend(std::iter::repeat_n(value, repeat as usize));
    }
    Ok((
        Huffman::new(&lengths[..hlit]),
        Huffman::new(&lengths[hlit..hlit + hdist]),
    ))
}

fn block(
    bits: &mut Bits<'_>,
    out: &mut Vec<u8>,
    lit: &Huffman,
    dist: &Huffman,
) -> Result<(), String> {
    loop {
        let symbol = lit.decode(bits)?;
        match symbol {
            0..=255 => out.push(symbol as u8),
            256 => return Ok(()),
            _ => {
                let i = usize::from(symbol - 257);
                let len =
                    usize::from(LENGTH_BASE[i]) + bits.take(u32::from(LENGTH_EXTRA[i]))? as usize;
                let d = usize::from(dist.decode(bits)?);
                let back =
                    usize::from(DIST_BASE[d]) + bits.take(u32::from(DIST_EXTRA[d]))? as usize;
                let from = out
                    .len()
                    .checked_sub(back)
                    .ok_or("a distance before the start")?;
                for k in 0..len {
                    out.push(out[from + k]);
                }
            }
        }
    }
}
