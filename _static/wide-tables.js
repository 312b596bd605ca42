// A table wider than its column scrolls sideways inside its own box (pydata-sphinx-theme's
// .pst-scrollable-table-container). On a phone nothing showed that it does: the box marks the edges with more table
// beyond them ("more-right", "more-left"), and wide-tables.css fades the table out at those edges. Kept up to date as
// the reader scrolls the box and as the box or its table changes width (rotating the phone, fonts loading).
(() => {
  const mark = (box) => {
    const hidden = box.scrollWidth - box.clientWidth;
    box.classList.toggle("more-left", box.scrollLeft > 1);
    box.classList.toggle("more-right", box.scrollLeft < hidden - 1);
  };
  const watch = () => {
    const boxOf = (element) => element.closest(".pst-scrollable-table-container");
    const resized = new ResizeObserver((entries) => entries.forEach((entry) => mark(boxOf(entry.target))));
    document.querySelectorAll(".pst-scrollable-table-container").forEach((box) => {
      box.addEventListener("scroll", () => mark(box), { passive: true });
      resized.observe(box); // the window's width
      [...box.children].forEach((table) => resized.observe(table)); // the table's own (fonts, a solution opened)
    });
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", watch);
  else watch();
})();
