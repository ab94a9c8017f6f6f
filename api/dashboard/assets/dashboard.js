(function () {
  'use strict';
  var SVG_NS = 'http://www.w3.org/2000/svg';
  var MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  var MONTHS_LONG = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September',
                     'October', 'November', 'December'];
  var DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
  var UNIT_NOUN = {hour: 'hours', day: 'days', week: 'weeks', mweek: 'weeks', month: 'months'};
  var DEFAULT_UNITS = {hour: 48, day: 30, week: 12, mweek: 12, month: 12};
  // Hour-axis label spacing: steps that keep labels on round local hours.
  var HOUR_STEPS = [1, 2, 3, 4, 6, 12, 24, 48, 72, 96, 168, 336, 672, 1344, 2688];
  var numberFormat = new Intl.NumberFormat('en-US');

  var el = {};
  ['controls', 'ns', 'key', 'unit', 'units', 'tz', 'tz-name', 'tz-names', 'sns', 'limit', 'compare', 'error',
   'error-list', 'status', 'summary', 'chart', 'series-body', 'breakdown-section', 'breakdown-heading',
   'breakdown-caption', 'breakdown-body', 'change-heading'].forEach(function (id) { el[id] = document.getElementById(id); });

  var passthrough = {};   // query parameters kept but not edited here
  // The address's key when the key box cannot hold it (a text input drops
  // line breaks): sent as given while the box shows what is left of it, so
  // the API refuses it rather than the page charting another key.
  var addressKey = null;  // {raw, shown}
  var generation = 0;     // answers of an older render are dropped
  var inFlight = null;    // query string of the render in progress
  var lastSeries = null;  // the last /clicks data, redrawn on resize

  function fmt(n) { return numberFormat.format(n); }
  function pad(n) { return n < 10 ? '0' + n : String(n); }
  function setState(state) {
    document.body.dataset.state = state;
    document.body.setAttribute('aria-busy', state === 'loading' ? 'true' : 'false');
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function add(parent, tag, attrs, text) {
    var node = parent.namespaceURI === SVG_NS || tag === 'svg'
        ? document.createElementNS(SVG_NS, tag) : document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (k) { node.setAttribute(k, String(attrs[k])); });
    if (text !== undefined && text !== null) node.textContent = text;
    parent.appendChild(node);
    return node;
  }

  // ---- time: every date is shown in the offset the API used (tz_offset) ----
  function offsetLabel(hours) {
    if (hours === 0) return 'UTC';
    return 'UTC' + (hours < 0 ? '\u2212' : '+') + Math.abs(hours);
  }
  function local(dt, tz) { return new Date((dt + tz * 3600) * 1000); }  // read with getUTC*
  function ymd(d) { return d.getUTCFullYear() + '-' + pad(d.getUTCMonth() + 1) + '-' + pad(d.getUTCDate()); }
  function monthDay(d) { return MONTHS[d.getUTCMonth()] + ' ' + d.getUTCDate(); }
  function longDate(dt, tz, unit) {
    var d = local(dt, tz);
    switch (unit) {
      case 'hour': return DAYS[d.getUTCDay()] + ' ' + ymd(d) + ' ' + pad(d.getUTCHours()) + ':00';
      case 'week': case 'mweek': return 'week of ' + DAYS[d.getUTCDay()] + ' ' + ymd(d);
      case 'month': return MONTHS_LONG[d.getUTCMonth()] + ' ' + d.getUTCFullYear();
      default: return DAYS[d.getUTCDay()] + ' ' + ymd(d);
    }
  }
  // Two lines per axis label; the second only when it changes.
  function axisLabel(dt, tz, unit) {
    var d = local(dt, tz);
    if (unit === 'hour') return [pad(d.getUTCHours()) + ':00', monthDay(d)];
    if (unit === 'month') return [MONTHS[d.getUTCMonth()], String(d.getUTCFullYear())];
    return [monthDay(d), String(d.getUTCFullYear())];
  }
  function browserOffset() {
    var minutes = -new Date().getTimezoneOffset();
    return minutes % 60 === 0 && minutes >= -720 && minutes <= 840 ? minutes / 60 : 0;
  }

  // ---- controls and the query string ----
  // Query strings the API's way, as forms encode them: '+' is a space, %2B a
  // plus. Written out with encodeURIComponent (a space as %20, a plus as %2B).
  function Query(search) {
    var self = this;
    this.names = [];
    this.values = {};
    (search || '').replace(/^\?/, '').split('&').forEach(function (part) {
      if (!part) return;
      var eq = part.indexOf('=');
      try {
        var decode = function (s) { return decodeURIComponent(s.replace(/\+/g, ' ')); };
        var name = decode(eq < 0 ? part : part.slice(0, eq));
        if (!self.has(name)) self.set(name, decode(eq < 0 ? '' : part.slice(eq + 1)));
      } catch (e) { /* a malformed escape: that parameter is ignored */ }
    });
  }
  Query.prototype.has = function (n) { return Object.prototype.hasOwnProperty.call(this.values, n); };
  Query.prototype.get = function (n) { return this.has(n) ? this.values[n] : null; };
  Query.prototype.set = function (n, v) {
    if (!this.has(n)) this.names.push(n);
    this.values[n] = String(v);
  };
  Query.prototype.toString = function () {
    var self = this;
    return this.names.map(function (n) {
      return encodeURIComponent(n) + '=' + encodeURIComponent(self.values[n]);
    }).join('&');
  };

  function fillZones() {
    for (var h = -12; h <= 14; h++) add(el.tz, 'option', {value: String(h)}, offsetLabel(h));
    try {
      (Intl.supportedValuesOf ? Intl.supportedValuesOf('timeZone') : []).forEach(function (z) {
        add(el['tz-names'], 'option', {value: z});
      });
    } catch (e) { /* an old browser: free text still works */ }
  }
  function ensureOption(select, value) {
    for (var i = 0; i < select.options.length; i++) if (select.options[i].value === value) return;
    // Unknown values (a hand-edited URL) go to the API as given: it is the one judge.
    add(select, 'option', {value: value}, value + ' (from the address)');
  }
  function applyQuery() {
    var q = new Query(location.search);
    el.ns.value = q.has('ns') ? q.get('ns') : 'u';
    var key = q.get('key') || '';
    el.key.value = key;
    addressKey = el.key.value !== key ? {raw: key, shown: el.key.value} : null;
    var unit = q.get('unit') || 'day';
    ensureOption(el.unit, unit);
    el.unit.value = unit;
    el.units.value = q.get('units') || String(DEFAULT_UNITS[unit] || 30);
    var tz = q.get('timezone');
    if (tz === null) tz = q.get('hour_offset');
    if (tz === null) tz = q.get('tz_offset');
    tz = tz === null ? '' : tz.trim();
    el['tz-name'].value = '';
    el.tz.value = String(browserOffset());
    if (tz === '') {
      el.tz.value = String(browserOffset());
    } else if (/^[+-]?\d{1,2}$/.test(tz) && Number(tz) >= -12 && Number(tz) <= 14) {
      el.tz.value = String(Number(tz));
    } else {  // a zone name; the select follows the offset the API resolves it to
      el['tz-name'].value = tz;
    }
    el.sns.value = q.has('sns') ? q.get('sns') : 'c';
    el.limit.value = q.get('limit') || '10';
    var compare = q.get('compare') || '';
    el.compare.value = compare === 'previous' || compare === 'year' ? compare : '';
    if (q.get('unit_reference_ts')) passthrough.unit_reference_ts = q.get('unit_reference_ts');
  }
  function timezoneValue() { return el['tz-name'].value.trim() || el.tz.value; }
  function pageQuery() {
    var q = new Query('');
    q.set('ns', el.ns.value.trim());
    q.set('key', addressKey && el.key.value === addressKey.shown ? addressKey.raw : el.key.value);
    q.set('unit', el.unit.value);
    q.set('units', el.units.value.trim());
    q.set('timezone', timezoneValue());
    q.set('sns', el.sns.value.trim());
    q.set('limit', el.limit.value.trim());
    q.set('compare', el.compare.value);
    Object.keys(passthrough).forEach(function (k) { q.set(k, passthrough[k]); });
    return q;
  }
  function apiQuery(q, names) {
    var p = new Query('');
    names.forEach(function (n) { if (q.has(n) && q.get(n) !== '') p.set(n, q.get(n)); });
    return p;
  }

  // ---- the API ----
  function ApiError(endpoint, reason, message) {
    this.endpoint = endpoint; this.reason = reason; this.message = message;
  }
  function getJson(endpoint, params) {
    return fetch(endpoint + '?' + params.toString(), {headers: {Accept: 'application/json'}, cache: 'no-store'})
      .then(function (response) {
        return response.text().then(function (text) {
          var body = null;
          try { body = JSON.parse(text); } catch (e) { body = null; }
          if (response.ok && body && body.status_code === 200 && body.data) return body.data;
          var reason = body && body.status_txt ? body.status_txt : 'HTTP_' + response.status;
          var message = body && typeof body.message === 'string' ? body.message
              : (text.slice(0, 300) || response.statusText || 'no answer');
          throw new ApiError(endpoint, reason, message);
        });
      }, function (err) {
        throw new ApiError(endpoint, 'UNREACHABLE', 'could not reach the API node: ' + err);
      });
  }
  function settle(promise) {
    return promise.then(function (data) { return {data: data}; },
                        function (err) { return {error: err instanceof ApiError ? err
                            : new ApiError('page', 'SCRIPT_ERROR', String(err))}; });
  }

  // ---- rendering ----
  function showErrors(errors) {
    clear(el['error-list']);
    var seen = {};
    errors.forEach(function (e) {
      var id = e.reason + '\n' + e.message;
      if (seen[id]) { seen[id].textContent += ', /' + e.endpoint; return; }
      var li = add(el['error-list'], 'li', {'class': 'error-item', 'data-reason': e.reason});
      add(li, 'span', {'class': 'error-reason'}, e.reason);
      li.appendChild(document.createTextNode(': '));
      add(li, 'span', {'class': 'error-message'}, e.message);
      li.appendChild(document.createTextNode(' '));
      seen[id] = add(li, 'span', {'class': 'error-endpoint'}, '(from /' + e.endpoint);
    });
    Object.keys(seen).forEach(function (id) { seen[id].textContent += ')'; });
    el.error.hidden = errors.length === 0;
  }

  function niceTicks(max) {
    if (max <= 0) return [0, 1];
    var raw = max / 5, mag = Math.pow(10, Math.floor(Math.log10(raw))), step = mag;
    [1, 2, 2.5, 5, 10].some(function (m) { step = m * mag; return raw <= step; });
    if (step < 1) step = 1;
    var ticks = [];
    for (var t = 0; t < max + step; t += step) { ticks.push(t); if (t >= max) break; }
    return ticks;
  }

  // "+12.5%", "-3.0%", or "new" when the earlier count was 0 (change null).
  function changeText(change) {
    if (change === null || change === undefined) return 'new';
    return (change > 0 ? '+' : '') + (100 * change).toFixed(1) + '%';
  }
  function changeClass(change) {
    return 'change' + (change > 0 ? ' up' : change < 0 ? ' down' : '');
  }

  function zoneText(data) {
    var name = el['tz-name'].value.trim();
    return name ? name + ' (' + offsetLabel(data.tz_offset) + ')' : offsetLabel(data.tz_offset);
  }

  function drawChart(data) {
    var svg = el.chart, tz = Number(data.tz_offset) || 0, unit = data.unit;
    var series = data.clicks.slice().reverse();  // the API sends newest first
    var n = series.length;
    var width = Math.max(320, Math.round(svg.parentNode.clientWidth - 12 || 800));
    var height = Math.round(Math.min(380, Math.max(230, width * 0.36)));
    var max = 0, total = 0;
    series.forEach(function (s) { max = Math.max(max, s.clicks); total += s.clicks; });
    // compare=: the earlier window's units, oldest first, beside unit i.
    var earlier = data.compare && Array.isArray(data.compare.clicks) ? data.compare.clicks.slice().reverse() : null;
    if (earlier) earlier.forEach(function (s) { max = Math.max(max, s.clicks); });
    var ticks = niceTicks(max), top = ticks[ticks.length - 1];
    var m = {top: 12, right: 14, bottom: 44, left: 16 + 7.2 * fmt(top).length};
    var plotW = width - m.left - m.right, plotH = height - m.top - m.bottom, baseY = m.top + plotH;
    clear(svg);
    svg.setAttribute('viewBox', '0 0 ' + width + ' ' + height);
    svg.setAttribute('width', width);
    svg.setAttribute('height', height);
    svg.setAttribute('data-unit', unit);
    svg.setAttribute('data-tz-offset', tz);
    // The window's total, then how it is cut: "612 clicks in 5 hours, by
    // hour, from …" (it read "612 clicks per hour", a rate it is not).
    var title = n ? fmt(total) + (total === 1 ? ' click' : ' clicks') + ' in ' + n + ' ' +
        (UNIT_NOUN[unit] || 'units') + ', by ' + (unit === 'mweek' ? 'week' : unit) + ', from ' + longDate(series[0].dt, tz, unit) + ' to ' + longDate(series[n - 1].dt, tz, unit) +
        ', ' + zoneText(data) : 'No units in this window';
    add(svg, 'title', {id: 'chart-title'}, title);
    add(svg, 'desc', {id: 'chart-desc'}, 'Bar chart; the table below the chart has every number.');

    var yAxis = add(svg, 'g', {'class': 'axis y-axis'});
    ticks.forEach(function (t) {
      var y = (baseY - (t / top) * plotH).toFixed(1);
      add(yAxis, 'line', {'class': 'grid', x1: m.left, x2: width - m.right, y1: y, y2: y});
      add(yAxis, 'text', {x: m.left - 6, y: y, 'text-anchor': 'end', dy: '0.35em'}, fmt(t));
    });

    var band = n ? plotW / n : plotW;
    var gap = band >= 4 ? Math.max(1, band * 0.2) : 0;
    var barW = Math.max(band - gap, 0.6);
    var bars = add(svg, 'g', {'class': 'bars'});
    series.forEach(function (s, i) {
      var h = top ? (s.clicks / top) * plotH : 0;
      var x = m.left + i * band;
      var g = add(bars, 'g', {'class': 'unit'});
      // A unit not over yet ("complete": false) is drawn hatched: its bar
      // will still grow, so a dip there is not a drop.
      var open = s.complete === false;
      add(g, 'title', null, longDate(s.dt, tz, unit) + ': ' + fmt(s.clicks) + (s.clicks === 1 ? ' click' : ' clicks') +
          (open ? ' so far (not over yet)' : ''));
      add(g, 'rect', {'class': 'hit', x: x.toFixed(2), y: m.top, width: band.toFixed(2), height: plotH});
      add(g, 'rect', {'class': open ? 'bar incomplete' : 'bar', x: (x + gap / 2).toFixed(2), y: (baseY - h).toFixed(2),
                      width: barW.toFixed(2), height: h.toFixed(2), 'data-dt': s.dt, 'data-clicks': s.clicks,
                      'data-complete': open ? 'false' : 'true'});
    });

    if (earlier && earlier.length === n) {
      var yOf = function (c) { return (baseY - (top ? (c / top) * plotH : 0)).toFixed(2); };
      var points = earlier.map(function (s, i) { return (m.left + (i + 0.5) * band).toFixed(2) + ',' + yOf(s.clicks); });
      var line = add(svg, 'g', {'class': 'compare'});
      if (n > 1) add(line, 'polyline', {'class': 'compare-line', points: points.join(' ')});
      earlier.forEach(function (s, i) {
        var c = add(line, 'circle', {'class': 'compare-point', cx: (m.left + (i + 0.5) * band).toFixed(2),
                                     cy: yOf(s.clicks), r: 3, 'data-dt': s.dt, 'data-clicks': s.clicks});
        add(c, 'title', null, 'Earlier: ' + longDate(s.dt, tz, unit) + ': ' + fmt(s.clicks) +
            (s.clicks === 1 ? ' click' : ' clicks'));
      });
    }

    var xAxis = add(svg, 'g', {'class': 'axis x-axis'});
    add(xAxis, 'line', {'class': 'baseline', x1: m.left, x2: width - m.right, y1: baseY, y2: baseY});
    var labelWidth = unit === 'month' ? 40 : 54;
    var every = Math.max(1, Math.ceil(n * labelWidth / Math.max(plotW, 1)));
    if (unit === 'hour') every = HOUR_STEPS.filter(function (s) { return s >= every; })[0] || every;
    var previous = null;
    series.forEach(function (s, i) {
      // Hours: label round local hours (midnight first); others: count back
      // from the newest unit so the current one is always labelled.
      var labelled = unit === 'hour' ? (((s.dt / 3600 + tz) % every) + every) % every === 0
                                     : (n - 1 - i) % every === 0;
      if (!labelled) return;
      var x = m.left + (i + 0.5) * band, lines = axisLabel(s.dt, tz, unit);
      add(xAxis, 'line', {'class': 'tick', x1: x.toFixed(1), x2: x.toFixed(1), y1: baseY, y2: baseY + 4});
      var text = add(xAxis, 'text', {x: x.toFixed(1), y: baseY + 17, 'text-anchor': 'middle'}, lines[0]);
      if (previous === null || previous !== lines[1]) {
        add(text.parentNode, 'text', {x: x.toFixed(1), y: baseY + 32, 'text-anchor': 'middle'}, lines[1]);
      }
      previous = lines[1];
    });
    if (n && total === 0) {
      add(svg, 'text', {'class': 'empty-note', x: (m.left + plotW / 2).toFixed(1), y: (m.top + plotH / 2).toFixed(1),
                        'text-anchor': 'middle'}, 'No clicks in this window');
    }
    return total;
  }

  function drawSummary(data, total) {
    var tz = Number(data.tz_offset) || 0, series = data.clicks, n = series.length;
    clear(el.summary);
    if (!n) { el.summary.textContent = 'No units in this window.'; return; }
    var peak = series.reduce(function (a, b) { return b.clicks > a.clicks ? b : a; });
    add(el.summary, 'strong', {id: 'total', 'data-total': total}, fmt(total));
    el.summary.appendChild(document.createTextNode(
        (total === 1 ? ' click' : ' clicks') + ' in ' + n + ' ' + (UNIT_NOUN[data.unit] || 'units') +
        ' (' + longDate(series[n - 1].dt, tz, data.unit) + ' to ' + longDate(series[0].dt, tz, data.unit) +
        ', times in ' + zoneText(data) + ')' +
        (total ? '; peak ' + fmt(peak.clicks) + ' on ' + longDate(peak.dt, tz, data.unit) : '') + '.'));
    if (data.resolution) {
      // A retention policy rolled this namespace's older days up: before
      // hourly_from the API has whole days of the policy's zone only.
      var r = data.resolution, iso = function (t) { return new Date(t * 1000).toISOString().slice(0, 16).replace('T', ' ') + ' UTC'; };
      el.summary.appendChild(document.createTextNode(' '));
      add(el.summary, 'span', {id: 'resolution', 'data-hourly-from': r.hourly_from, 'data-zone': r.zone},
          'Hourly data from ' + iso(r.hourly_from) + '; before it, whole days in ' + r.zone + ' only' +
          (r.kept_from ? ', and nothing before ' + iso(r.kept_from) : '') + '.');
    }
    if (data.compare && Array.isArray(data.compare.clicks)) {
      var before = data.compare.clicks.reduce(function (a, s) { return a + s.clicks; }, 0);
      el.summary.appendChild(document.createTextNode(' ' + (data.compare.window === 'year' ? 'A year earlier' : 'The period before') + ': '));
      add(el.summary, 'strong', {id: 'compare-total', 'data-total': before,
                                 'data-change': data.compare.change === null ? '' : data.compare.change}, fmt(before));
      el.summary.appendChild(document.createTextNode(' (dashed line); change '));
      add(el.summary, 'span', {'class': changeClass(data.compare.change)}, changeText(data.compare.change));
      el.summary.appendChild(document.createTextNode('.'));
    }
    var body = el['series-body'];
    clear(body);
    series.forEach(function (s) {
      var tr = add(body, 'tr', s.complete === false ? {'class': 'incomplete'} : null);
      add(tr, 'td', null, longDate(s.dt, tz, data.unit) + (s.complete === false ? ' (so far)' : ''));
      add(tr, 'td', {'class': 'num'}, fmt(s.clicks));
    });
  }

  function clearSeries() {
    lastSeries = null;
    clear(el.chart);
    add(el.chart, 'title', {id: 'chart-title'}, 'No chart');
    el.chart.setAttribute('viewBox', '0 0 800 120');
    el.chart.removeAttribute('width');
    el.chart.removeAttribute('height');
    add(el.chart, 'text', {'class': 'empty-note', x: 400, y: 64, 'text-anchor': 'middle'}, 'Nothing to chart');
    clear(el.summary);
    clear(el['series-body']);
  }

  function drawBreakdown(data, sns, total) {
    var body = el['breakdown-body'], rows = data.breakdown || [];
    var compared = !!data.compare;
    el['change-heading'].hidden = !compared;
    if (compared) el['change-heading'].textContent = data.compare.window === 'year' ? 'vs a year earlier' : 'vs period before';
    clear(body);
    if (!rows.length && !data.other && !data.none) {
      add(add(body, 'tr', {'class': 'empty'}), 'td', {colspan: compared ? 5 : 4}, 'No ' + sns + ' values in this window.');
      return;
    }
    var max = rows.reduce(function (a, r) { return Math.max(a, r.clicks); }, 0);
    rows.forEach(function (r) {
      var tr = add(body, 'tr', {'class': 'breakdown-row', 'data-value': r.value, 'data-clicks': r.clicks,
                                'data-uniques': r.uniques});
      add(tr, 'th', {scope: 'row', title: r.value}, r.value);
      add(tr, 'td', {'class': 'num'}, fmt(r.clicks));
      add(tr, 'td', {'class': 'num'}, fmt(r.uniques));
      var share = add(add(tr, 'td', {'class': 'share-cell'}), 'div', {'class': 'share'});
      var fill = add(add(share, 'span', {'class': 'share-track', 'aria-hidden': 'true'}), 'span', {'class': 'share-fill'});
      fill.style.width = (max ? (100 * r.clicks / max) : 0).toFixed(1) + '%';
      add(share, 'span', {'class': 'share-pct'}, total > 0 ? (100 * r.clicks / total).toFixed(1) + '%' : '');
      if (compared && r.compare) {
        var change = r.compare.change;
        add(tr, 'td', {'class': 'num ' + changeClass(change), 'data-compare-clicks': r.compare.clicks,
                       'data-change': change === null ? '' : change,
                       title: fmt(r.compare.clicks) + ' before'}, changeText(change));
      }
    });
    // What the rows leave out, so the table adds up to the total: the
    // values beyond the limit, and clicks sent without a value of sns.
    [['breakdown-other', 'Other values', data.other], ['breakdown-none', 'No ' + sns + ' value', data.none]]
        .forEach(function (rest) {
          if (!rest[2]) return;
          var tr = add(body, 'tr', {'class': 'breakdown-rest ' + rest[0], 'data-clicks': rest[2]});
          add(tr, 'th', {scope: 'row'}, rest[1]);
          add(tr, 'td', {'class': 'num'}, fmt(rest[2]));
          add(tr, 'td', {'class': 'num'}, '');
          add(add(tr, 'td', {'class': 'share-cell'}), 'span', {'class': 'share-pct'},
              total > 0 ? (100 * rest[2] / total).toFixed(1) + '%' : '');
          if (compared) add(tr, 'td', {'class': 'num'}, '');
        });
  }

  // Distinct visitors over the window, after the clicks summary.
  function drawVisitors(data) {
    var n = data.uniques;
    el.summary.appendChild(document.createTextNode(' '));
    add(el.summary, 'strong', {id: 'uniques-total', 'data-total': n}, fmt(n));
    el.summary.appendChild(document.createTextNode((n === 1 ? ' distinct visitor' : ' distinct visitors') +
        ' in the window.'));
  }

  function run(force) {
    var q = pageQuery(), qs = q.toString();
    history.replaceState(null, '', '?' + qs);
    if (!force && inFlight === qs) return;  // Enter fires change and submit
    var sns = q.get('sns');
    el['breakdown-section'].hidden = !sns;
    if (sns) {
      el['breakdown-heading'].textContent = 'Top ' + sns + ' values';
      el['breakdown-caption'].textContent = 'Top values of subtotal namespace ' + sns + ', most clicks first';
    }
    if (!q.get('key')) {
      generation++;
      inFlight = null;
      showErrors([]);
      el.status.textContent = 'Enter a key to chart its clicks.';
      setState('idle');
      return;
    }
    var mine = ++generation;
    inFlight = qs;
    setState('loading');
    el.status.textContent = 'Loading\u2026';
    var clicksParams = apiQuery(q, ['ns', 'key', 'unit', 'units', 'timezone', 'unit_reference_ts', 'compare']);
    clicksParams.set('rollup', 'false');
    var clicks = settle(getJson('clicks', clicksParams));
    var uniquesParams = apiQuery(q, ['ns', 'key', 'unit', 'units', 'timezone', 'unit_reference_ts']);
    uniquesParams.set('rollup', 'true');
    var uniques = settle(getJson('uniques', uniquesParams));
    var breakdownParams = apiQuery(q, ['sns', 'ns', 'key', 'unit', 'units', 'timezone', 'unit_reference_ts', 'limit',
                                       'compare']);
    breakdownParams.set('uniques', 'true');
    var breakdown = sns ? settle(getJson('breakdown', breakdownParams)) : null;
    Promise.all([clicks, breakdown, uniques]).then(function (answers) {
      if (mine !== generation) return;
      inFlight = null;
      var errors = [], total = null;
      var c = answers[0], b = answers[1], u = answers[2];
      if (c.data) {
        lastSeries = c.data;
        if (el['tz-name'].value.trim()) el.tz.value = String(c.data.tz_offset);
        total = drawChart(c.data);
        drawSummary(c.data, total);
        if (u.data) drawVisitors(u.data);
        else errors.push(u.error);
      } else {
        errors.push(c.error);
        clearSeries();
      }
      if (b && b.data) drawBreakdown(b.data, sns, total);
      else if (b) { errors.push(b.error); clear(el['breakdown-body']); }
      showErrors(errors);
      el.status.textContent = errors.length ? 'Could not show everything: see the error above.'
          : 'Updated at ' + new Date().toLocaleTimeString() + '.';
      setState(errors.length ? 'error' : 'ready');
    }).catch(function (err) {
      if (mine !== generation) return;
      inFlight = null;
      showErrors([new ApiError('page', 'SCRIPT_ERROR', String(err))]);
      setState('error');
    });
  }

  function onChange(event) {
    var t = event.target;
    if (t === el.tz) el['tz-name'].value = '';  // a picked offset wins over an old name
    if (t === el.unit) {
      var previous = el.unit.dataset.previous || 'day';
      if (el.units.value === String(DEFAULT_UNITS[previous])) el.units.value = String(DEFAULT_UNITS[el.unit.value] || 30);
      el.unit.dataset.previous = el.unit.value;
    }
    run(false);
  }

  fillZones();
  applyQuery();
  el.unit.dataset.previous = el.unit.value;
  el.controls.addEventListener('change', onChange);
  el.controls.addEventListener('submit', function (event) { event.preventDefault(); run(false); });
  var resizeTimer = null;
  window.addEventListener('resize', function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () { if (lastSeries) drawChart(lastSeries); }, 120);
  });
  run(true);
})();
