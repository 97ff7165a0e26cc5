//! Real documents and archives built in code, shared by the document tests and the fuzzer:
//! PDFs and DOCX files made here exercise the real parsers without binary fixtures.

use std::io::Write;
use std::path::{Path, PathBuf};

/// A valid PDF with one page per entry of `pages`, each page a few lines of Helvetica text,
/// and an optional `/Title` in its information dictionary.
pub fn pdf(pages: &[&[&str]], title: Option<&str>) -> Vec<u8> {
    let mut objects: Vec<String> = Vec::new();
    // 1: catalog, 2: pages, 3: font, 4: info, then per page: page object and content stream.
    let n = pages.len();
    let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", 5 + 2 * i)).collect();
    objects.push("<< /Type /Catalog /Pages 2 0 R >>".into());
    objects.push(format!(
        "<< /Type /Pages /Kids [{}] /Count {n} >>",
        kids.join(" ")
    ));
    objects.push(
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".into(),
    );
    objects.push(match title {
        Some(t) => format!("<< /Title ({t}) /Producer (rudder tests) >>"),
        None => "<< /Producer (rudder tests) >>".into(),
    });
    for (i, lines) in pages.iter().enumerate() {
        let mut content = String::from("BT /F1 12 Tf 14 TL 72 720 Td\n");
        for line in *lines {
            let escaped = line
                .replace('\\', "\\\\")
                .replace('(', "\\(")
                .replace(')', "\\)");
            content.push_str(&format!("({escaped}) Tj T*\n"));
        }
        content.push_str("ET");
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] \
             /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
            6 + 2 * i
        ));
        objects.push(format!(
            "<< /Length {} >>\nstream\n{content}\nendstream",
            content.len()
        ));
    }
    let mut out = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{body}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for off in offsets {
        out.extend_from_slice(format!("{off:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R /Info 4 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// A DOCX (a zip of WordprocessingML) with a title paragraph and body paragraphs.
pub fn docx(title: &str, paragraphs: &[&str]) -> Vec<u8> {
    let parts = docx_parts(title, paragraphs);
    let entries: Vec<(&str, &[u8])> = parts.iter().map(|(n, c)| (*n, c.as_slice())).collect();
    zip(&entries, true)
}

/// The parts of [`docx`]'s archive, for callers that pack them differently (stored, not
/// deflated, so a fuzzer's mutations land in the XML).
pub fn docx_parts(title: &str, paragraphs: &[&str]) -> Vec<(&'static str, Vec<u8>)> {
    let mut body = format!(
        r#"<w:p><w:pPr><w:pStyle w:val="Title"/></w:pPr><w:r><w:t>{title}</w:t></w:r></w:p>"#
    );
    for p in paragraphs {
        // Two runs per paragraph, as Word writes them, and an escaped ampersand.
        let (a, b) = p.split_at(p.len() / 2);
        body.push_str(&format!(
            r#"<w:p><w:r><w:t xml:space="preserve">{}</w:t></w:r><w:r><w:rPr><w:b/></w:rPr><w:t>{}</w:t></w:r></w:p>"#,
            a.replace('&', "&amp;"),
            b.replace('&', "&amp;")
        ));
    }
    // A deleted revision is not text.
    body.push_str(r#"<w:p><w:del><w:r><w:delText>withdrawnclause</w:delText></w:r></w:del></w:p>"#);
    let document = format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{body}</w:body></w:document>"#
    );
    vec![
        ("[Content_Types].xml", br#"<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#.to_vec()),
        ("word/document.xml", document.into_bytes()),
    ]
}

/// A zip archive holding `entries` (name, content), each deflated or stored as `deflate` says:
/// a Takeout download, as `rudder import takeout.zip` reads it.
pub fn zip(entries: &[(&str, &[u8])], deflate: bool) -> Vec<u8> {
    let method = if deflate {
        zip::CompressionMethod::Deflated
    } else {
        zip::CompressionMethod::Stored
    };
    let options = zip::write::SimpleFileOptions::default().compression_method(method);
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut zip = zip::ZipWriter::new(&mut buf);
        for (name, content) in entries {
            zip.start_file(*name, options).unwrap();
            zip.write_all(content).unwrap();
        }
        zip.finish().unwrap();
    }
    buf.into_inner()
}

/// Two PDF pages of distinct text (for page citations and extractor seeds).
pub const PDF_PAGE_1: &[&str] = &[
    "Chapter one covers the migration of arctic terns.",
    "They fly from pole to pole every single year.",
];
pub const PDF_PAGE_2: &[&str] = &[
    "Chapter two is about the basalt columns of Staffa.",
    "Cooling lava cracked into hexagonal pillars.",
];

/// Writes `content` at `dir/rel`, creating the folders.
pub fn write(dir: &Path, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, content).unwrap();
    path
}

/// A folder `notes` under `root` with one document of every format (Markdown, text, HTML,
/// a two-page PDF, DOCX) and three files the library skips (an image, a hidden folder, an
/// Office lock file).
pub fn library_folder(root: &Path) -> PathBuf {
    let dir = root.join("notes");
    write(
        &dir,
        "garden.md",
        "---\ntags: [private-front-matter]\n---\n# Tomato Growing Notes\n\nWater the tomatoes deeply twice a week.\n\n<div>inline markup</div>\n\n## Pests\n\nHornworms chew the leaves; pick them off by hand.\n",
    );
    write(
        &dir,
        "plain.txt",
        "Sourdough starter: feed it flour and water daily.\nKeep it somewhere warm.\n",
    );
    write(
        &dir,
        "page.html",
        r#"<!doctype html><html><head><title>Bicycle Maintenance</title>
<style>body { font-family: zebracolumnstyle; }</style>
<script>var trackingpixelsecret = "xyzzyscriptword";</script></head>
<body><nav>Home</nav><h1>Keeping a bike running</h1>
<p>Lubricate the chain every few hundred kilometres.</p>
<script type="module">console.log("anotherscriptonlyword")</script>
<noscript>enablejavascriptplease</noscript>
<p>Check tyre pressure&nbsp;weekly &amp; before long rides.</p></body></html>"#,
    );
    write(
        &dir,
        "sub/report.pdf",
        pdf(
            &[PDF_PAGE_1, PDF_PAGE_2],
            Some("Field Notes on Birds and Rocks"),
        ),
    );
    write(
        &dir,
        "sub/letter.docx",
        docx(
            "Quarterly Letter",
            &[
                "Revenue from the lighthouse tours rose sharply this quarter.",
                "Staff & volunteers repainted the lamp room.",
            ],
        ),
    );
    // Not indexed: unsupported, hidden, Office lock file.
    write(&dir, "image.png", b"\x89PNG not text");
    write(&dir, ".hidden/secret.md", "# hiddenfolderword\n");
    write(&dir, "~$letter.docx", b"lock");
    dir
}
