//! Text inside XML and HTML: markup characters escaped. Used by the
//! JUnit reports of `ignite test` and `ignite eval` and by the HTML pages.

/// Text as XML character data or an attribute value: markup characters
/// escaped, characters XML 1.0 cannot hold dropped.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' | '\r' => out.push(c),
            c if u32::from(c) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escape_keeps_xml_well_formed() {
        assert_eq!(escape("a<b & \"c\"\n\u{1}"), "a&lt;b &amp; &quot;c&quot;&#10;");
    }
}
