/*! partnertrack browser tracker. No dependencies.
 *
 * <script src="{base_url}/tracker.js" data-program-id="ID" defer></script>
 *
 * Reads the aff (or via) parameter of the landing URL, records the click,
 * keeps its id in the first-party cookie __PREFIX___click_id for the
 * program's cookie window, sends a visit per page view, writes the click id
 * into Stripe payment links, buy buttons and pricing tables, and offers
 * window.__PREFIX__.lead({customer_key, email}) (alias signup(key, email)).
 * Calls made before the script loaded can be queued:
 *   window.__PREFIX__ = window.__PREFIX__ || []; __PREFIX__.push(['signup', key, email]);
 */
(function (w, d) {
  'use strict';
  var P = '__PREFIX__';
  var CLICK = P + '_click_id', LANDING = P + '_aff_url', HISTORY = P + '_click_ids';
  var LEGACY = 'customer_code', PROBE = P + '_domain_test', MARK = 'data-' + P + '-ref';
  var PARAMS = ['aff', 'via'], FALLBACK_DAYS = 60, HISTORY_MAX = 10;

  var script = d.currentScript || d.querySelector('script[src*="tracker.js"]');
  function attr(name) {
    if (!script) return null;
    var v = script.getAttribute('data-' + P + '-' + name);
    return v !== null ? v : script.getAttribute('data-' + name);
  }
  function scriptOrigin() {
    try { return new URL(script.src).origin; } catch (e) { return location.origin; }
  }
  var debugAttr = attr('debug');
  var cfg = {
    programId: attr('program-id') || attr('program') || null,
    apiBase: (attr('api-base') || scriptOrigin()).replace(/\/+$/, ''),
    cookieDomain: attr('cookie-domain') || null,
    debug: debugAttr !== null && debugAttr !== 'false'
  };
  var sessionId = 'sess_' + Math.random().toString(36).slice(2, 12) + '_' + Date.now();
  var ready = Promise.resolve(null); // the click in flight: leads wait for it

  function log() {
    if (cfg.debug && w.console) w.console.log.apply(w.console, ['[' + P + ']'].concat([].slice.call(arguments)));
  }

  // Cookies: SameSite=Lax, Secure on HTTPS, path=/, on the root domain.
  function getCookie(name) {
    var parts = d.cookie ? d.cookie.split('; ') : [];
    for (var i = 0; i < parts.length; i++) {
      var eq = parts[i].indexOf('=');
      if (parts[i].slice(0, eq) === name) {
        try { return decodeURIComponent(parts[i].slice(eq + 1)); } catch (e) { return null; }
      }
    }
    return null;
  }
  function attrs(days, domain) {
    var s = '; path=/; SameSite=Lax';
    if (days !== null) s += '; expires=' + new Date(Date.now() + days * 864e5).toUTCString();
    if (domain) s += '; domain=' + domain;
    if (location.protocol === 'https:') s += '; Secure';
    return s;
  }
  var root;
  // rootDomain finds the widest domain that takes a cookie (.example.com
  // before .shop.example.com); none on localhost or an IP address.
  function rootDomain() {
    if (cfg.cookieDomain) return cfg.cookieDomain;
    if (root !== undefined) return root;
    root = '';
    var host = location.hostname;
    if (!host || host === 'localhost' || /^[\d.]+$/.test(host) || host.indexOf(':') >= 0) return root;
    var labels = host.split('.');
    for (var i = labels.length - 2; i >= 0; i--) {
      var candidate = '.' + labels.slice(i).join('.');
      d.cookie = PROBE + '=1' + attrs(null, candidate);
      if (getCookie(PROBE) === '1') {
        d.cookie = PROBE + '=' + attrs(-1, candidate);
        root = candidate;
        break;
      }
    }
    return root;
  }
  function setCookie(name, value, days) {
    d.cookie = name + '=' + encodeURIComponent(value) + attrs(days, rootDomain());
  }

  function clickId() {
    var id = getCookie(CLICK);
    if (!id) {
      var legacy = getCookie(LEGACY); // older snippets' cookie
      if (legacy) { id = legacy; setCookie(CLICK, id, FALLBACK_DAYS); }
    }
    return id;
  }
  function clickIds() {
    var v = getCookie(HISTORY);
    return v ? v.split(',') : [];
  }
  function referralCode(href) {
    try {
      var u = new URL(href, location.href);
      for (var i = 0; i < PARAMS.length; i++) {
        var v = u.searchParams.get(PARAMS[i]);
        if (v && v.trim()) return v.trim();
      }
    } catch (e) {}
    return null;
  }
  function timezone() {
    try { return Intl.DateTimeFormat().resolvedOptions().timeZone || null; } catch (e) { return null; }
  }
  function programIdValue() {
    return cfg.programId && /^\d+$/.test(String(cfg.programId)) ? Number(cfg.programId) : cfg.programId;
  }

  function post(path, body, keepalive) {
    return fetch(cfg.apiBase + path, {
      method: 'POST',
      mode: 'cors',
      credentials: 'omit',
      keepalive: !!keepalive,
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body)
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (j) {
        if (!r.ok) {
          var err = new Error((j && j.error && j.error.message) || ('HTTP ' + r.status));
          err.status = r.status;
          err.body = j;
          throw err;
        }
        return j;
      });
    });
  }

  // trackClick records a click when the landing URL carries a referral
  // code and the visitor has no click of that code yet (a different code
  // is a partner switch: the old click id goes along).
  function trackClick(force) {
    var code = referralCode(location.href);
    if (!code) return Promise.resolve(null);
    var existing = clickId();
    if (existing && !force && referralCode(getCookie(LANDING) || '') === code) {
      log('click already recorded', existing);
      return Promise.resolve(existing);
    }
    var body = {
      affiliate_url: location.href,
      page_url: location.href,
      page_title: d.title || null,
      referrer_url: d.referrer || null,
      session_id: sessionId,
      user_agent: navigator.userAgent,
      screen_resolution: w.screen ? w.screen.width + 'x' + w.screen.height : null,
      viewport_size: w.innerWidth + 'x' + w.innerHeight,
      language: navigator.language || null,
      timezone: timezone(),
      existing_click_id: existing || null
    };
    if (cfg.programId) body.program_id = String(cfg.programId);
    return post('/api/v1/track/click', body).then(function (res) {
      if (!res || !res.click_id) return null;
      var days = res.cookie_window_days || FALLBACK_DAYS;
      setCookie(CLICK, res.click_id, days);
      setCookie(LEGACY, res.click_id, days);
      setCookie(LANDING, location.href.slice(0, 1024), days);
      var ids = clickIds().filter(function (x) { return x !== res.click_id; });
      ids.push(res.click_id);
      setCookie(HISTORY, ids.slice(-HISTORY_MAX).join(','), days);
      log('click recorded', res.click_id, days + ' days');
      decorate();
      return res.click_id;
    }).catch(function (e) {
      log('click not recorded', e);
      return null;
    });
  }

  function trackVisit() {
    if (!cfg.programId) return Promise.resolve(null);
    return post('/api/v1/track/visit', {
      program_id: String(cfg.programId),
      click_id: clickId(),
      session_id: sessionId,
      page_url: location.href,
      referrer_url: d.referrer || null
    }, true).catch(function (e) { log('visit not recorded', e); return null; });
  }

  // decorate writes the click id into Stripe payment links
  // (client_reference_id) and buy buttons and pricing tables
  // (client-reference-id), leaving alone a value the brand put there.
  function decorate() {
    var id = clickId();
    if (!id) return;
    var links = d.querySelectorAll('a[href^="https://buy.stripe.com/"]');
    for (var i = 0; i < links.length; i++) {
      try {
        var u = new URL(links[i].href);
        var current = u.searchParams.get('client_reference_id');
        if (!current || current === links[i].getAttribute(MARK)) {
          u.searchParams.set('client_reference_id', id);
          links[i].href = u.toString();
          links[i].setAttribute(MARK, id);
        }
      } catch (e) {}
    }
    var widgets = d.querySelectorAll('stripe-buy-button, stripe-pricing-table');
    for (var j = 0; j < widgets.length; j++) {
      var cur = widgets[j].getAttribute('client-reference-id');
      if (!cur || cur === widgets[j].getAttribute(MARK)) {
        widgets[j].setAttribute('client-reference-id', id);
        widgets[j].setAttribute(MARK, id);
      }
    }
  }
  function watch() {
    decorate();
    if (!w.MutationObserver) return;
    var pending = false;
    new MutationObserver(function () {
      if (pending) return;
      pending = true;
      setTimeout(function () { pending = false; decorate(); }, 50);
    }).observe(d.documentElement, { childList: true, subtree: true });
  }

  // lead records a browser-mode lead for the visitor's click, once the
  // click of this page view (if any) has been answered.
  function lead(opts) {
    opts = opts || {};
    return ready.then(function () {
      var body = {
        click_id: clickId(),
        customer_key: opts.customer_key || opts.customerKey || null,
        email: opts.email || null,
        session_id: sessionId,
        page_url: location.href,
        click_ids: clickIds()
      };
      if (cfg.programId) body.program_id = programIdValue();
      log('lead', body);
      return post('/api/v1/track/lead', body);
    });
  }
  function signup(customerKey, email) {
    return lead({ customer_key: customerKey, email: email });
  }

  function getConfig() {
    if (!cfg.programId) return Promise.resolve(null);
    return fetch(cfg.apiBase + '/api/v1/track/config?program_id=' + encodeURIComponent(cfg.programId), { credentials: 'omit' })
      .then(function (r) { return r.json(); }).then(function (j) { return j.data || null; });
  }

  function init(opts) {
    opts = opts || {};
    if (opts.programId || opts.program_id) cfg.programId = String(opts.programId || opts.program_id);
    if (opts.apiBase) cfg.apiBase = String(opts.apiBase).replace(/\/+$/, '');
    if (opts.cookieDomain) { cfg.cookieDomain = opts.cookieDomain; root = undefined; }
    if (opts.debug !== undefined) cfg.debug = !!opts.debug;
    return api;
  }

  var api = {
    init: init,
    lead: lead,
    signup: signup,
    trackClick: function () { ready = trackClick(true); return ready; },
    trackVisit: trackVisit,
    getClickId: clickId,
    getConfig: getConfig,
    getData: function () {
      return { click_id: clickId(), click_ids: clickIds(), aff_url: getCookie(LANDING), session_id: sessionId, program_id: cfg.programId };
    },
    push: function (call) { run(call); }
  };
  function run(call) {
    if (!call || !call.length || typeof api[call[0]] !== 'function') return;
    var r = api[call[0]].apply(api, [].slice.call(call, 1));
    if (r && typeof r.catch === 'function') r.catch(function (e) { log(call[0] + ' failed', e); });
  }

  var queued = w[P];
  w[P] = api;
  var calls = Object.prototype.toString.call(queued) === '[object Array]' ? queued : [];
  for (var k = 0; k < calls.length; k++) if (calls[k] && calls[k][0] === 'init') run(calls[k]);
  ready = trackClick(false);
  ready.then(trackVisit);
  if (d.readyState === 'loading') d.addEventListener('DOMContentLoaded', watch);
  else watch();
  for (var q = 0; q < calls.length; q++) if (calls[q] && calls[q][0] !== 'init') run(calls[q]);
})(window, document);
