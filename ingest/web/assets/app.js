// partnertrack dashboard: small progressive enhancements. Every page works
// without this script; it adds copy buttons and formats money and counts in
// the reader's locale.
(function () {
  "use strict";
  var lang = navigator.language || "en";

  // Money: <span data-amount="1234.5" data-currency="USD">
  document.querySelectorAll("[data-amount][data-currency]").forEach(function (el) {
    // The exact decimal text goes to Intl as a string, which formats it
    // without passing through a float (ECMA-402 NumberFormat v3).
    var v = el.getAttribute("data-amount");
    if (!/^-?\d+(\.\d+)?$/.test(v)) return;
    try {
      el.textContent = new Intl.NumberFormat(lang, { style: "currency", currency: el.getAttribute("data-currency") }).format(v);
    } catch (e) { /* an unknown currency keeps the server's text */ }
  });
  // Counts: <span data-count="12345">
  document.querySelectorAll("[data-count]").forEach(function (el) {
    var v = el.getAttribute("data-count");
    if (/^-?\d+$/.test(v)) el.textContent = new Intl.NumberFormat(lang).format(v);
  });

  // Copy buttons: <button data-copy="#id"> copies the text or value of #id.
  document.querySelectorAll("[data-copy]").forEach(function (btn) {
    btn.hidden = false;
    btn.addEventListener("click", function () {
      var src = document.querySelector(btn.getAttribute("data-copy"));
      if (!src) return;
      var text = src.value !== undefined ? src.value : src.textContent;
      var done = function () {
        var old = btn.textContent;
        btn.textContent = "Copied";
        setTimeout(function () { btn.textContent = old; }, 1500);
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(done);
      } else if (src.select) {
        src.select();
        document.execCommand("copy");
        done();
      }
    });
  });

})();
