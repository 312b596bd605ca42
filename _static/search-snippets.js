/* A search result quotes the page it found (Sphinx's Search.htmlToText), and math there is still raw TeX, as
   "\(W_O W_V^\top\)": MathJax typesets it on the page only. The quote shows "…" in place of each formula. */
(function () {
  function leaveOutMath() {
    if (typeof Search === "undefined" || Search.leavesOutMath) return;
    const toText = Search.htmlToText;
    Search.htmlToText = (htmlString, anchor) => {
      const doc = new DOMParser().parseFromString(htmlString, "text/html");
      doc.querySelectorAll("span.math, div.math").forEach((el) => el.replaceWith("…"));
      return toText(doc.documentElement.outerHTML, anchor);
    };
    Search.leavesOutMath = true;
  }
  document.addEventListener("DOMContentLoaded", leaveOutMath);
})();
