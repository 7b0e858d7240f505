//! The HTML report: one self-contained file (the report model as embedded JSON, uPlot and the page's script and
//! styles inlined) that opens with no network.

use super::Report;

/// uPlot 1.6.32 from the npm package `uplot` (MIT; the licence is `assets/uplot/LICENSE`, kept in the page too).
const UPLOT_JS: &str = include_str!("../../assets/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../../assets/uplot/uPlot.min.css");
const UPLOT_LICENSE: &str = include_str!("../../assets/uplot/LICENSE");
pub(super) const REPORT_JS: &str = include_str!("../../assets/report/report.js");
const REPORT_CSS: &str = include_str!("../../assets/report/report.css");

/// The page's content security policy: nothing may be fetched, only the inline scripts and styles run.
const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:";

/// Renders the whole page.
pub fn render(report: &Report) -> String {
    let json = embed_json(&serde_json::to_string(report).expect("the report model serializes"));
    let title = escape_text(&report.title);
    let licence = UPLOT_LICENSE.replace("*/", "* /");
    // Errors are counted from the first script on, so an error while uPlot loads is counted too.
    format!(
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>{title}</title>
<script>
(function () {{
  var n = 0, b = 0;
  function mark() {{ if (document.body) {{ document.body.dataset.errors = String(n); document.body.dataset.blocked = String(b); }} }}
  window.addEventListener("error", function () {{ n++; mark(); }}, true);
  window.addEventListener("unhandledrejection", function () {{ n++; mark(); }});
  document.addEventListener("securitypolicyviolation", function () {{ b++; mark(); }});
  document.addEventListener("DOMContentLoaded", mark);
}})();
</script>
<style>
{UPLOT_CSS}
{REPORT_CSS}
</style>
</head>
<body data-errors="0" data-blocked="0">
<main id="report"></main>
<noscript><p>This report draws its tables and charts with JavaScript; the data is in the page's JSON below.</p></noscript>
<script type="application/json" id="hakaru-data">{json}</script>
<script>
/* uPlot 1.6.32 (https://github.com/leeoniya/uPlot), vendored into hakaru.
{licence}*/
{UPLOT_JS}
</script>
<script>
{REPORT_JS}
</script>
</body>
</html>
"#
    )
}

/// JSON safe inside a `<script>` element: `<`, `>` and `&` can only appear inside JSON strings, where their
/// `\u` escapes mean the same, so no `</script>` or `<!--` can end or confuse the element.
fn embed_json(json: &str) -> String {
    json.replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026")
}

fn escape_text(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_json_cannot_close_its_script_element_and_reads_back_the_same() {
        let text = r#"{"title":"</script><!-- & x"}"#;
        let safe = embed_json(text);
        assert!(!safe.contains('<') && !safe.contains('>'), "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back["title"], "</script><!-- & x");
    }

    #[test]
    fn the_page_loads_nothing_from_outside() {
        let report = Report {
            title: "t <b>".into(),
            generator: "hakaru".into(),
            series: vec![],
            notes: vec![],
            verdicts: vec![],
            answer: vec![],
            headline: vec![],
        };
        let page = render(&report);
        assert!(page.contains("<title>t &lt;b&gt;</title>"));
        for needle in ["<script src", "<link", "@import", "url(http", "@font-face"] {
            assert!(!page.contains(needle), "the page has {needle}");
        }
        assert!(page.contains("The MIT License"), "uPlot's licence travels with it");
    }
}
