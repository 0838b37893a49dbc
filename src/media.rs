//! Media values: images (PNG, JPEG, GIF, WebP) and documents (PDF).
//!
//! A media value is the JSON object `{media_type, data}`, `data` being the
//! bytes in standard, padded base64. The bytes say what they are: the first
//! ones name the [`Format`] ([`sniff`]), which must fit the declared
//! [`Kind`] and the `media_type` written beside them, and the last ones show
//! whether the file is whole (a PNG ends with its `IEND` chunk, a PDF with
//! `%%EOF`). Checking a value decodes only its first and last bytes, so a
//! large scan is checked without a copy of it.
//!
//! Files become media values here too ([`read_file`]), refused by size
//! before they are read whole. [`digest`] names the bytes (SHA-256), which
//! stores and cache keys use instead of the bytes themselves.

use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest as _, Sha256};

/// The most bytes `file(...)` reads unless told otherwise (the default of
/// `--max-bytes`).
pub const FILE_LIMIT: usize = 8 << 20;

/// The most bytes `file(...)` reads in this process: the `--max-bytes` of
/// the command that runs ([`set_file_limit`]). A process setting, as the
/// flag is: `file(...)` is a pure function of its path, evaluated where no
/// engine is at hand.
static FILE_LIMIT_NOW: AtomicUsize = AtomicUsize::new(FILE_LIMIT);

/// Makes `file(...)` refuse files larger than `bytes` from now on.
pub fn set_file_limit(bytes: usize) {
    FILE_LIMIT_NOW.store(bytes, Ordering::Relaxed);
}

/// The most bytes `file(...)` reads now ([`set_file_limit`], else
/// [`FILE_LIMIT`]).
#[must_use]
pub fn file_limit() -> usize {
    FILE_LIMIT_NOW.load(Ordering::Relaxed)
}

/// The two media types of `.ign`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `image`: PNG, JPEG, GIF or WebP.
    Image,
    /// `document`: PDF.
    Document,
}

impl Kind {
    /// The type's name in `.ign`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Kind::Image => "image",
            Kind::Document => "document",
        }
    }

    /// The kind whose type is called `name`.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "image" => Some(Kind::Image),
            "document" => Some(Kind::Document),
            _ => None,
        }
    }

    /// The formats of this kind.
    pub fn formats(self) -> impl Iterator<Item = &'static Format> {
        FORMATS.iter().filter(move |f| f.kind == self)
    }

    /// The formats in words: "PNG, JPEG, GIF or WebP".
    fn formats_in_words(self) -> String {
        let names: Vec<&str> = self.formats().map(|f| f.name).collect();
        match names.split_last() {
            Some((last, [])) => (*last).to_owned(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }
}

/// A file format a media value may hold.
#[derive(Debug, PartialEq, Eq)]
pub struct Format {
    /// The IANA media type: `image/png`.
    pub media_type: &'static str,
    /// The format's usual name: `PNG`.
    pub name: &'static str,
    /// Whether it is an image or a document.
    pub kind: Kind,
}

impl Format {
    /// "a PNG image", "a PDF document".
    fn in_words(&self) -> String {
        format!("a {} {}", self.name, self.kind.name())
    }
}

/// Every format, images first.
pub const FORMATS: [Format; 5] = [
    Format { media_type: "image/png", name: "PNG", kind: Kind::Image },
    Format { media_type: "image/jpeg", name: "JPEG", kind: Kind::Image },
    Format { media_type: "image/gif", name: "GIF", kind: Kind::Image },
    Format { media_type: "image/webp", name: "WebP", kind: Kind::Image },
    Format { media_type: "application/pdf", name: "PDF", kind: Kind::Document },
];

/// The format whose media type is `media_type`.
#[must_use]
pub fn format_of(media_type: &str) -> Option<&'static Format> {
    FORMATS.iter().find(|f| f.media_type == media_type)
}

/// The format of bytes that start with `head`.
#[must_use]
pub fn sniff(head: &[u8]) -> Option<&'static Format> {
    let index = if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        0
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        1
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        2
    } else if head.starts_with(b"RIFF") && head.get(8..12) == Some(b"WEBP") {
        3
    } else if head.starts_with(b"%PDF-") {
        4
    } else {
        return None;
    };
    Some(&FORMATS[index])
}

/// Bytes read from the start of a value to sniff it.
const HEAD: usize = 48;
/// Bytes read from the end of a value to see that it is whole (a PDF may
/// end with a little after its last `%%EOF`).
const TAIL: usize = 1024;

/// Why bytes of `format` that start with `head`, end with `tail` and are
/// `len` long are not a whole file.
fn truncated(format: &Format, head: &[u8], tail: &[u8], len: usize) -> Option<&'static str> {
    let whole = match format.name {
        "PNG" => tail.ends_with(&[0, 0, 0, 0, b'I', b'E', b'N', b'D', 0xAE, 0x42, 0x60, 0x82]),
        "JPEG" => tail.ends_with(&[0xFF, 0xD9]),
        "GIF" => tail.ends_with(&[0x3B]),
        "WebP" => head.get(4..8).is_some_and(|size| {
            let size = u32::from_le_bytes([size[0], size[1], size[2], size[3]]) as usize;
            size.saturating_add(8) <= len
        }),
        _ => tail.windows(5).any(|w| w == b"%%EOF"),
    };
    if whole {
        return None;
    }
    Some(match format.name {
        "PNG" => "it does not end with an `IEND` chunk",
        "JPEG" => "it does not end with an end-of-image marker",
        "GIF" => "it does not end with a trailer byte",
        "WebP" => "it is shorter than its `RIFF` header says",
        _ => "it has no `%%EOF` at its end",
    })
}

/// True when `data` is standard base64 with padding.
fn is_base64(data: &str) -> bool {
    let bytes = data.as_bytes();
    if bytes.len() % 4 != 0 {
        return false;
    }
    let body = bytes.len() - bytes.iter().rev().take(2).take_while(|&&b| b == b'=').count();
    bytes[..body].iter().all(|&b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

/// The decoded size of valid base64 `data`.
#[must_use]
pub fn decoded_len(data: &str) -> usize {
    let pads = data.bytes().rev().take(2).take_while(|&b| b == b'=').count();
    (data.len() / 4 * 3).saturating_sub(pads)
}

/// The first bytes of valid base64 `data`.
fn head_of(data: &str) -> Vec<u8> {
    STANDARD.decode(&data[..data.len().min(HEAD / 3 * 4)]).unwrap_or_default()
}

/// The format of the bytes of `data` when it is base64 of an image or a
/// document (by its first bytes).
#[must_use]
pub fn sniff_base64(data: &str) -> Option<&'static Format> {
    if !is_base64(data) {
        return None;
    }
    sniff(&head_of(data))
}

/// What is wrong with a media value said to be `kind`: its `media_type`
/// and `data` fields (`None` when missing or not strings) and whether it
/// has other fields. `None` when it is right.
#[must_use]
pub fn problem(
    kind: Kind,
    media_type: Option<&str>,
    data: Option<&str>,
    other_fields: bool,
) -> Option<String> {
    let (Some(media_type), Some(data), false) = (media_type, data, other_fields) else {
        return Some(format!(
            "expected {} as `{{media_type, data}}` (two strings, `data` in base64)",
            a_kind(kind)
        ));
    };
    if data.is_empty() {
        return Some("`data` is empty: a media value needs its bytes".to_owned());
    }
    if !is_base64(data) {
        return Some("`data` is not base64 (the standard alphabet, padded with `=`)".to_owned());
    }
    let format = match sniffed(Some(kind), data) {
        Ok(format) => format,
        Err(problem) => return Some(problem),
    };
    if media_type != format.media_type {
        return Some(format!(
            "`media_type` is `{media_type}` but the bytes are {} (`{}`)",
            format.in_words(),
            format.media_type
        ));
    }
    whole(format, data).err()
}

/// The format of the bytes of valid base64 `data`, by its first bytes,
/// when it is of `kind` (any kind when `None`).
fn sniffed(kind: Option<Kind>, data: &str) -> Result<&'static Format, String> {
    let head = head_of(data);
    let Some(format) = sniff(&head) else {
        let expected = kind.map_or_else(
            || "an image or a document (PNG, JPEG, GIF, WebP or PDF)".to_owned(),
            |k| format!("{} ({})", a_kind(k), k.formats_in_words()),
        );
        let shown: Vec<String> = head.iter().take(8).map(|b| format!("{b:02x}")).collect();
        return Err(format!(
            "expected {expected}, got bytes that are none of them (they start {})",
            shown.join(" ")
        ));
    };
    match kind {
        Some(kind) if kind != format.kind => {
            Err(format!("expected {}, got {}", a_kind(kind), format.in_words()))
        }
        _ => Ok(format),
    }
}

/// Whether the bytes of valid base64 `data`, of `format`, are a whole
/// file (by their first and last bytes).
fn whole(format: &Format, data: &str) -> Result<(), String> {
    let tail_chars = data.len().min(TAIL.div_ceil(3) * 4);
    let tail = STANDARD.decode(&data[data.len() - tail_chars..]).unwrap_or_default();
    match truncated(format, &head_of(data), &tail, decoded_len(data)) {
        Some(why) => Err(format!("{} is truncated: {why}", format.in_words())),
        None => Ok(()),
    }
}

/// "an image", "a document".
#[must_use]
pub fn a_kind(kind: Kind) -> String {
    let name = kind.name();
    if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        format!("an {name}")
    } else {
        format!("a {name}")
    }
}

/// Bytes read and encoded at a time: a multiple of 3, so that the base64
/// of each piece joins the next with no padding between them.
const CHUNK: usize = 3 << 16;

/// Reads the file at `path` as a media value of `kind` (any kind when
/// `None`): its media type and its bytes in base64, refusing a file larger
/// than `limit` bytes before reading it. The bytes are encoded as they are
/// read, a piece at a time, into the buffer `buffer(len)` makes (`len` the
/// length of the base64 of a file of its size): they are never held whole
/// beside their base64, which is written where it stays.
///
/// # Errors
/// The file cannot be read, is too large, changes size while it is read
/// or is not a whole file of the kind.
pub fn read_file<B: AsRef<[u8]> + AsMut<[u8]>>(
    path: &Path,
    kind: Option<Kind>,
    limit: usize,
    buffer: impl FnOnce(usize) -> B,
) -> Result<(&'static str, B), String> {
    let shown = path.display();
    let cannot = |e: std::io::Error| format!("cannot read `{shown}`: {e}");
    let file = std::fs::File::open(path).map_err(cannot)?;
    let metadata = file.metadata().map_err(cannot)?;
    let data = if metadata.is_file() && metadata.len() > 0 {
        encoded_file(file, metadata.len(), &shown, limit, buffer)?
    } else {
        // A pipe, a device or a `/proc` file: its size is known once it is read.
        let mut bytes = Vec::new();
        file.take(limit as u64 + 1).read_to_end(&mut bytes).map_err(cannot)?;
        if bytes.len() > limit {
            return Err(over_limit(&shown, limit));
        }
        let mut data = buffer(bytes.len().div_ceil(3) * 4);
        STANDARD.encode_slice(&bytes, data.as_mut()).map_err(|e| format!("`{shown}`: {e}"))?;
        data
    };
    // Base64 is ASCII.
    let text = std::str::from_utf8(data.as_ref()).map_err(|e| format!("`{shown}`: {e}"))?;
    if text.is_empty() {
        return Err(format!("`{shown}` is empty: a media value needs its bytes"));
    }
    let format = sniffed(kind, text).map_err(|e| format!("`{shown}`: {e}"))?;
    whole(format, text).map_err(|e| format!("`{shown}`: {e}"))?;
    Ok((format.media_type, data))
}

/// The base64 of regular `file`, `size` bytes when it was opened, read in
/// pieces into `buffer(length)`: refused when it grows past `limit` or
/// turns out to be of another size.
fn encoded_file<B: AsRef<[u8]> + AsMut<[u8]>>(
    file: std::fs::File,
    size: u64,
    shown: &std::path::Display<'_>,
    limit: usize,
    buffer: impl FnOnce(usize) -> B,
) -> Result<B, String> {
    if size > limit as u64 {
        return Err(format!(
            "`{shown}` is {size} bytes, more than the limit of {limit} (raise it with `--max-bytes`)"
        ));
    }
    let size = usize::try_from(size).unwrap_or(limit);
    let changed = || {
        format!(
            "`{shown}` changed size while it was read (it was {size} bytes): read it when it is whole"
        )
    };
    let mut data = buffer(size.div_ceil(3) * 4);
    let mut written = 0;
    let mut piece = vec![0; CHUNK.min(size.div_ceil(3) * 3)];
    // The file may grow between the size check and the read: the limit
    // holds all the same (and a file of another size is refused below).
    let mut reader = file.take(limit as u64 + 1);
    let mut read = 0;
    loop {
        let filled =
            fill(&mut reader, &mut piece).map_err(|e| format!("cannot read `{shown}`: {e}"))?;
        read += filled;
        if read > limit {
            return Err(over_limit(shown, limit));
        }
        let room = data.as_mut().get_mut(written..).unwrap_or_default();
        written += STANDARD.encode_slice(&piece[..filled], room).map_err(|_| changed())?;
        if filled < piece.len() {
            break;
        }
    }
    if written != data.as_ref().len() {
        return Err(changed());
    }
    Ok(data)
}

/// Why a file that turned out larger than `limit` bytes as it was read is refused.
fn over_limit(shown: &std::path::Display<'_>, limit: usize) -> String {
    format!("`{shown}` is more than the limit of {limit} bytes")
}

/// Reads from `reader` until `buffer` is full or the input ends: the bytes read.
fn fill(reader: &mut impl Read, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// The SHA-256 of base64 `data`'s bytes, in hex; `None` when `data` is
/// not base64.
#[must_use]
pub fn digest(data: &str) -> Option<String> {
    // Decoded a piece at a time (a multiple of 4 characters, so only the
    // last may be padded): a digest never holds the bytes whole.
    let mut hasher = Sha256::new();
    let mut bytes = Vec::with_capacity(CHUNK);
    for piece in data.as_bytes().chunks(CHUNK / 3 * 4) {
        bytes.clear();
        STANDARD.decode_vec(piece, &mut bytes).ok()?;
        hasher.update(&bytes);
    }
    Some(format!("{:x}", hasher.finalize()))
}

/// The media value `value` is (`{media_type, data}` of a known media type,
/// nothing else): its format and data, else `None`.
#[must_use]
pub fn of_json(value: &serde_json::Value) -> Option<(&'static Format, &str)> {
    let fields = value.as_object().filter(|f| f.len() == 2)?;
    let media_type = fields.get("media_type")?.as_str()?;
    Some((format_of(media_type)?, fields.get("data")?.as_str()?))
}

/// `value` with every media value in it (at any depth) shown by its digest
/// and size instead of its bytes: `{media_type, bytes, sha256}`, for
/// snapshots and reports that should not hold the bytes.
pub fn summarize(value: &mut serde_json::Value) {
    use serde_json::Value;
    if let Some((format, data)) = of_json(value) {
        let summary = serde_json::json!({
            "media_type": format.media_type,
            "bytes": decoded_len(data),
            "sha256": digest(data),
        });
        *value = summary;
        return;
    }
    match value {
        Value::Array(items) => items.iter_mut().for_each(summarize),
        Value::Object(fields) => fields.values_mut().for_each(summarize),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A whole 1×1 PNG.
    fn png() -> Vec<u8> {
        let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
        bytes.extend_from_slice(&[0, 0, 0, 0, b'I', b'E', b'N', b'D', 0xAE, 0x42, 0x60, 0x82]);
        bytes
    }

    #[test]
    fn the_bytes_name_the_format() {
        assert_eq!(sniff(&png()).map(|f| f.name), Some("PNG"));
        assert_eq!(sniff(b"%PDF-1.4\n").map(|f| f.media_type), Some("application/pdf"));
        assert_eq!(sniff(b"RIFF\x04\0\0\0WEBP").map(|f| f.name), Some("WebP"));
        assert_eq!(sniff(b"GIF89a").map(|f| f.kind), Some(Kind::Image));
        assert_eq!(sniff(b"{\"a\": 1}"), None);
    }

    #[test]
    fn values_are_checked_by_their_bytes() {
        let data = STANDARD.encode(png());
        assert_eq!(problem(Kind::Image, Some("image/png"), Some(&data), false), None);
        let wrong_type = problem(Kind::Image, Some("image/jpeg"), Some(&data), false);
        assert_eq!(
            wrong_type.as_deref(),
            Some("`media_type` is `image/jpeg` but the bytes are a PNG image (`image/png`)")
        );
        let document = problem(Kind::Document, Some("image/png"), Some(&data), false);
        assert_eq!(document.as_deref(), Some("expected a document, got a PNG image"));
        let cut = STANDARD.encode(&png()[..12]);
        let cut = problem(Kind::Image, Some("image/png"), Some(&cut), false);
        assert_eq!(
            cut.as_deref(),
            Some("a PNG image is truncated: it does not end with an `IEND` chunk")
        );
        let not_base64 = problem(Kind::Image, Some("image/png"), Some("a b"), false);
        assert!(not_base64.is_some_and(|p| p.contains("not base64")));
        assert!(problem(Kind::Image, None, Some(&data), false).is_some());
        assert!(problem(Kind::Image, Some("image/png"), Some(&data), true).is_some());
    }

    #[test]
    fn large_values_are_checked_at_both_ends() {
        let mut pdf = b"%PDF-1.4\n".to_vec();
        pdf.resize(100_000, b' ');
        pdf.extend_from_slice(b"%%EOF\n");
        let data = STANDARD.encode(&pdf);
        assert_eq!(problem(Kind::Document, Some("application/pdf"), Some(&data), false), None);
        assert_eq!(decoded_len(&data), pdf.len());
        let cut = STANDARD.encode(&pdf[..50_000]);
        assert!(problem(Kind::Document, Some("application/pdf"), Some(&cut), false).is_some());
    }

    #[test]
    fn files_are_encoded_a_piece_at_a_time() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("big.pdf");
        let mut pdf = b"%PDF-1.4\n".to_vec();
        pdf.extend((0..CHUNK * 2 + 7).map(|i| (i % 251) as u8));
        pdf.extend_from_slice(b"%%EOF\n");
        std::fs::write(&path, &pdf).expect("written");
        let (media_type, data) =
            read_file(&path, Some(Kind::Document), pdf.len(), |len| vec![0; len]).expect("read");
        let data = String::from_utf8(data).expect("base64");
        assert_eq!(
            (media_type, data.as_str()),
            ("application/pdf", STANDARD.encode(&pdf).as_str())
        );
        assert_eq!(digest(&data), Some(format!("{:x}", Sha256::digest(&pdf))));
        let over =
            read_file(&path, None, pdf.len() - 1, |len| vec![0; len]).expect_err("over the limit");
        assert!(over.ends_with("(raise it with `--max-bytes`)"), "{over}");
        // A pipe: its bytes, whatever size it reports.
        let mut child = std::process::Command::new("cat")
            .arg(&path)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("cat runs");
        let stdout = child.stdout.take().expect("piped");
        let fd = std::os::fd::AsRawFd::as_raw_fd(&stdout);
        let pipe = std::path::PathBuf::from(format!("/proc/self/fd/{fd}"));
        let (media_type, data) =
            read_file(&pipe, None, pdf.len(), |len| vec![0; len]).expect("a pipe is read whole");
        assert_eq!((media_type, data), ("application/pdf", STANDARD.encode(&pdf).into_bytes()));
        drop(stdout);
        child.wait().expect("cat ends");
        std::fs::write(&path, b"").expect("emptied");
        let empty = read_file(&path, None, 10, |len| vec![0; len]).expect_err("empty");
        assert!(empty.ends_with("is empty: a media value needs its bytes"), "{empty}");
        // Its size says 0 bytes, but it has text: read whole, then judged
        // by its bytes (not an image or a document).
        let status = Path::new("/proc/self/status");
        let text = read_file(status, None, 1 << 20, |len| vec![0; len]).expect_err("not media");
        assert!(!text.contains("changed size"), "{text}");
        let over = read_file(status, None, 10, |len| vec![0; len]).expect_err("over the limit");
        assert!(over.ends_with("is more than the limit of 10 bytes"), "{over}");
    }

    #[test]
    fn digests_name_the_bytes() {
        let data = STANDARD.encode(b"abc");
        assert_eq!(
            digest(&data).as_deref(),
            Some("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        );
    }
}
