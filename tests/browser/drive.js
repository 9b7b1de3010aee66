// Drives headless Chromium through the built book for tests/book/book_browser/, which writes the plan
// and checks what comes back: this script presses keys and reports what the page shows, it
// asserts nothing itself.
//
//   node drive.js PUPPETEER_CORE_DIR CHROMIUM BOOK_DIR PLAN.json
//
// It serves BOOK_DIR on 127.0.0.1 (a port the system picks), runs each scenario of the plan in a
// fresh page and prints one JSON object: the observations and measures by label, the JavaScript
// errors the pages raised, and every request that went anywhere but the local server (the book
// must load nothing from the network).
//
// A scenario: { "name", "url" (relative to the book, with its query), "javascript" (default
// true), "viewport": [w, h], "actions": [...] }, an action one of
//   { "observe": LABEL }          what the page shows now (see `observe` below)
//   { "observe": LABEL, "view": N }   the same, with the values of code view N (from 1) only: a
//                                 walk through one view reads no other view's values at each step
//   { "press": KEY }              a key; the page must stay
//   { "press": KEY, "navigates": true }   a key that must load another page
//   { "click": CSS selector }     the first element it matches
//   { "type": [SELECTOR, TEXT] }  replaces the text of the first input it matches, key by key
//   { "screenshot": PATH }        the window, as PNG
//   { "screenshot": PATH, "full": true }   the whole page, as PNG
//   { "open": CSS selector }      opens every <details> it matches (PyTorch panels, "What if?")
//   { "measure": LABEL }          how the page is laid out at this width (see `measure` below)
//   { "probe": LABEL }            what the charts say on hover and how formulas render (`probe` below)
//   { "hover": CSS selector }     moves the mouse over the first element it matches
'use strict';

const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');

const [puppeteerDir, chromium, bookDir, planFile] = process.argv.slice(2);
const puppeteer = require(puppeteerDir);
const plan = JSON.parse(fs.readFileSync(planFile, 'utf8'));

const types = {
    '.html': 'text/html; charset=utf-8',
    '.js': 'text/javascript',
    '.css': 'text/css',
    '.svg': 'image/svg+xml',
    '.png': 'image/png',
    '.woff2': 'font/woff2',
    '.json': 'application/json',
};

function serve(root) {
    const server = http.createServer((req, res) => {
        const url = new URL(req.url, 'http://localhost');
        const file = path.join(root, decodeURIComponent(url.pathname));
        if (!file.startsWith(root)) {
            res.writeHead(403).end();
            return;
        }
        fs.readFile(file, (err, data) => {
            if (err) {
                res.writeHead(404).end();
                return;
            }
            res.writeHead(200, { 'Content-Type': types[path.extname(file)] || 'application/octet-stream' });
            res.end(data);
        });
    });
    return new Promise(resolve => server.listen(0, '127.0.0.1', () => resolve(server)));
}

// What the page shows: the step-mode state of every code view, each value slot with its line,
// name, text and whether it is hidden, where the marked line and the step bar are in the window
// (top and bottom, CSS pixels), and presenter mode's effects. With `only` (a view's number from
// 1), the other views' value slots are left out (an empty list): reading every slot of a page of
// 29 views at each of its hundreds of steps took most of a minute.
function observe(only) {
    // A tensor drawn as a grid in a slot: its head (dtype and shape), its cells with a hover,
    // the first hover, whether it stays inside the window, and whether its box scrolls.
    const tensorGrid = el => {
        const grid = el.querySelector('.lecture-tensor');
        if (!grid) {
            return null;
        }
        const cells = grid.querySelectorAll('.lecture-tensor-grid > span[title]');
        const scroll = grid.querySelector('.lecture-tensor-scroll');
        return {
            head: grid.querySelector('.lecture-tensor-head').textContent,
            cells: cells.length,
            first_title: cells.length ? cells[0].getAttribute('title') : null,
            within: grid.getBoundingClientRect().right <= document.documentElement.clientWidth + 0.5,
            scrolls: scroll.scrollWidth > scroll.clientWidth,
        };
    };
    const visible = el => {
        if (!el) {
            return false;
        }
        const style = getComputedStyle(el);
        const box = el.getBoundingClientRect();
        return style.display !== 'none' && style.visibility !== 'hidden' && box.width > 0 && box.right > 0 &&
            box.left < window.innerWidth;
    };
    const lineOf = el => {
        const cell = el.closest('.lecture-lv');
        const number = cell && cell.previousElementSibling && cell.previousElementSibling.previousElementSibling;
        return number && number.classList.contains('lecture-ln') ? Number(number.textContent) : null;
    };
    const views = Array.from(document.querySelectorAll('.lecture-code')).map((view, index) => {
        const skip = only !== null && only !== undefined && index + 1 !== only;
        const head = view.querySelector('.lecture-code-head code');
        const current = Array.from(view.querySelectorAll('[aria-current]')).map(el => ({
            value: el.getAttribute('aria-current'),
            line: el.previousElementSibling && el.previousElementSibling.classList.contains('lecture-ln')
                ? Number(el.previousElementSibling.textContent) : null,
            tag: el.tagName.toLowerCase(),
        }));
        const slots = skip ? [] : Array.from(view.querySelectorAll('[data-slot]')).map(el => {
            const name = el.querySelector('.lecture-lv-name');
            const text = el.textContent;
            const eq = text.indexOf(' = ');
            return {
                line: lineOf(el),
                name: name ? name.textContent : null,
                text: eq >= 0 ? text.slice(eq + 3) : text,
                title: el.getAttribute('title'),
                hidden: el.hidden || !visible(el),
                current: el.classList.contains('lecture-step-new'),
                grid: tensorGrid(el),
            };
        });
        const grid = view.querySelector('.lecture-code-grid');
        const status = view.querySelector('.lecture-steps-status');
        const box = (...els) => {
            const boxes = els.filter(Boolean).map(el => el.getBoundingClientRect());
            return boxes.length ? [Math.min(...boxes.map(r => r.top)), Math.max(...boxes.map(r => r.bottom))] : null;
        };
        // The current step's row: line number, code and values.
        const marked = view.querySelectorAll('.lecture-step-current');
        const bar = view.querySelector('.lecture-steps-bar');
        return {
            section: head ? head.textContent : null,
            stepping: view.classList.contains('lecture-stepping'),
            bar: view.querySelector('.lecture-steps-bar') !== null,
            status: status && visible(status) ? status.textContent : null,
            current: current,
            slots: slots,
            font_px: grid ? parseFloat(getComputedStyle(grid).fontSize) : null,
            current_box: box(...marked),
            bar_box: bar && visible(bar) ? box(bar) : null,
        };
    });
    return {
        path: location.pathname.split('/').pop(),
        search: location.search,
        presenting: document.documentElement.classList.contains('lecture-presenting'),
        sidebar_visible: visible(document.getElementById('mdbook-sidebar')),
        menu_visible: visible(document.getElementById('mdbook-menu-bar')),
        main_width: document.querySelector('main') ? document.querySelector('main').getBoundingClientRect().width : null,
        window_height: window.innerHeight,
        document_saw: window.__documentSaw || [],
        views: views,
        // The first "What if?" box's command line, and which PyTorch folds are open.
        what_if_command: (() => {
            const code = document.querySelector('.lecture-what-if-command code');
            return code ? code.textContent : null;
        })(),
        pytorch_open: Array.from(document.querySelectorAll('details.lecture-pytorch')).map(d => d.open && visible(d.querySelector('.lecture-code-grid'))),
    };
}

// How readable the page is at the window's width: for every code line shown, its width in the
// font's average characters; for every table cell, its width and its text's unwrapped width in
// average characters; for every chart, the size its smallest text is drawn at; which boxes of the
// benchmark tables scroll; and whether the page itself is wider than the window. A character
// width is the mean over letters and digits in the element's own font, so the numbers read the
// same at any font size.
function measure() {
    const canvas = document.createElement('canvas').getContext('2d');
    const sample = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
    const textWidth = (el, text) => {
        canvas.font = getComputedStyle(el).font;
        return canvas.measureText(text).width;
    };
    const charWidth = el => textWidth(el, sample) / sample.length;
    const shown = el => el.getClientRects().length > 0 && el.getBoundingClientRect().width > 0;
    const contentWidth = el => {
        const style = getComputedStyle(el);
        return el.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    };
    const excerpt = el => el.textContent.trim().replace(/\s+/g, ' ').slice(0, 60);
    const codeLines = Array.from(document.querySelectorAll('.lecture-code-grid > code')).filter(shown).map(el => ({
        chars: contentWidth(el) / charWidth(el),
        text: excerpt(el),
    }));
    const cells = Array.from(document.querySelectorAll('main table')).flatMap(table =>
        Array.from(table.querySelectorAll('th, td')).filter(shown).map(el => {
            const w = charWidth(el);
            return {
                chars: contentWidth(el) / w,
                natural_chars: Math.max(...el.textContent.trim().split('\n').map(t => textWidth(el, t.trim()))) / w,
                text: excerpt(el),
            };
        }));
    // The drawing the style sheet shows of each chart (a line chart has one for a wide column and
    // one for a phone's), and whether the chart's box scrolls sideways at this width.
    const charts = Array.from(document.querySelectorAll('svg.lecture-chart-svg')).filter(shown).map(svg => {
        const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
        const sizes = Array.from(svg.querySelectorAll('text')).map(t => parseFloat(getComputedStyle(t).fontSize) * scale);
        const box = svg.closest('.lecture-chart-scroll');
        const figure = svg.closest('figure');
        return {
            id: figure ? figure.id : '',
            label: (svg.getAttribute('aria-label') || '').slice(0, 60),
            smallest_text_px: sizes.length ? Math.min(...sizes) : null,
            scrolls: box ? box.scrollWidth > box.clientWidth + 1 : false,
        };
    });
    const root = document.scrollingElement;
    return {
        window_width: window.innerWidth,
        page_scroll_width: root.scrollWidth,
        code_lines: codeLines,
        cells: cells,
        charts: charts,
        bench_tables_scroll: Array.from(document.querySelectorAll('.lecture-bench')).map(b => b.scrollWidth > b.clientWidth + 1),
    };
}

// What a reader pointing at the page meets: for every chart, how many hover targets it has and,
// for its last target (drawn last, so on top of any point it coincides with) scrolled into view, the element under the pointer at the target's centre
// (document.elementFromPoint, as a mouse would find it) with that element's <title>; for every
// MathML formula, its text, whether it is a block, and its rendered box.
function probe() {
    const charts = Array.from(document.querySelectorAll('figure.lecture-chart')).map(figure => {
        // Targets of the drawing shown at this width (the other is hidden by the style sheet).
        const shownSvgs = Array.from(figure.querySelectorAll('svg.lecture-chart-svg')).filter(s => s.getClientRects().length > 0);
        const targets = shownSvgs.flatMap(s => Array.from(s.querySelectorAll('.lecture-chart-hover > *')));
        const first = targets[targets.length - 1];
        let hit = null;
        let box = null;
        let tapped = null;
        if (first) {
            first.scrollIntoView({ block: 'center', inline: 'center' });
            const r = first.getBoundingClientRect();
            box = [r.width, r.height];
            const under = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
            const title = under && under.querySelector(':scope > title');
            hit = title ? title.textContent : null;
            // A tap: the click a phone sends for it, on what is under the finger.
            if (under) {
                under.dispatchEvent(new MouseEvent('click', { bubbles: true }));
                const tip = figure.querySelector('.lecture-chart-tip');
                tapped = tip && !tip.hidden ? tip.textContent : null;
            }
        }
        return {
            id: figure.id,
            targets: targets.length,
            titled: Array.from(targets).filter(t => t.querySelector(':scope > title')).length,
            first_title: first && first.querySelector('title') ? first.querySelector('title').textContent : null,
            hit_title: hit,
            tapped: tapped,
            box: box,
        };
    });
    const math = Array.from(document.querySelectorAll('main math')).map(m => {
        const r = m.getBoundingClientRect();
        return {
            text: m.textContent,
            block: m.getAttribute('display') === 'block',
            box: [r.width, r.height],
            in_code: m.closest('code, pre') !== null,
            values: Array.from(m.querySelectorAll('.lecture-value')).map(v => v.textContent),
        };
    });
    return { charts: charts, math: math };
}

// Keys that reach listeners on `document` in the bubbling phase, where mdBook's are: a key that
// step mode handles must not arrive there.
function probeDocumentKeys() {
    window.__documentSaw = [];
    document.addEventListener('keydown', e => window.__documentSaw.push(e.key));
}

async function run(browser, origin, scenario, report) {
    const page = await browser.newPage();
    const [w, h] = scenario.viewport || [1280, 800];
    await page.setViewport({ width: w, height: h });
    await page.setJavaScriptEnabled(scenario.javascript !== false);
    page.on('pageerror', e => report.errors.push(`${scenario.name}: ${e.message}`));
    page.on('console', m => {
        if (m.type() === 'error') {
            report.errors.push(`${scenario.name}: console: ${m.text()}`);
        }
    });
    page.on('request', r => {
        if (!r.url().startsWith(origin) && !r.url().startsWith('data:')) {
            report.outside.push(`${scenario.name}: ${r.url()}`);
        }
    });
    const load = async () => {
        if (scenario.javascript !== false) {
            await page.evaluate(probeDocumentKeys);
            await page.evaluate(() => document.fonts.ready.then(() => undefined));
        }
    };
    await page.goto(`${origin}/${scenario.url}`, { waitUntil: 'load' });
    await load();
    for (const action of scenario.actions) {
        if ('observe' in action) {
            report.observations[action.observe] = await page.evaluate(observe, action.view === undefined ? null : action.view);
        } else if ('press' in action && action.navigates) {
            await Promise.all([page.waitForNavigation({ waitUntil: 'load', timeout: 20000 }), page.keyboard.press(action.press)]);
            await load();
        } else if ('press' in action) {
            await page.keyboard.press(action.press);
        } else if ('click' in action) {
            await page.click(action.click);
        } else if ('type' in action) {
            const [selector, text] = action.type;
            await page.click(selector, { clickCount: 3 });
            await page.type(selector, text);
        } else if ('screenshot' in action) {
            await page.screenshot({ path: action.screenshot, fullPage: action.full === true });
        } else if ('open' in action) {
            await page.$$eval(action.open, els => els.forEach(d => { d.open = true; }));
        } else if ('measure' in action) {
            report.measures[action.measure] = await page.evaluate(measure);
        } else if ('probe' in action) {
            report.probes[action.probe] = await page.evaluate(probe);
        } else if ('hover' in action) {
            // The mouse at the element's centre: a horizontal line's box has no height, which
            // puppeteer's own hover refuses as "not clickable".
            const [x, y] = await page.$eval(action.hover, el => {
                el.scrollIntoView({ block: 'center', inline: 'center' });
                const r = el.getBoundingClientRect();
                return [r.left + r.width / 2, r.top + r.height / 2];
            });
            await page.mouse.move(x, y);
        } else {
            throw new Error(`unknown action ${JSON.stringify(action)}`);
        }
    }
    await page.close();
}

(async () => {
    const server = await serve(path.resolve(bookDir));
    const origin = `http://127.0.0.1:${server.address().port}`;
    const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'cs336-chromium-'));
    const browser = await puppeteer.launch({
        executablePath: chromium,
        headless: true,
        // The machine has no network: without the background-networking flags Chromium's own
        // services keep trying and the closed network refuses its connections.
        args: [
            '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
            '--disable-background-networking', '--disable-component-update', '--disable-sync',
            `--user-data-dir=${profile}`,
        ],
    });
    const report = { observations: {}, measures: {}, probes: {}, errors: [], outside: [] };
    try {
        for (const scenario of plan) {
            await run(browser, origin, scenario, report);
        }
    } finally {
        await browser.close();
        server.close();
        fs.rmSync(profile, { recursive: true, force: true });
    }
    process.stdout.write(JSON.stringify(report));
})().catch(e => {
    process.stderr.write(`${e.stack || e}\n`);
    process.exit(1);
});
