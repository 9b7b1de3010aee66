// Stepping through a section's code, and presenter mode (book/src/reference.md: "Stepping through a section").
//
// The preprocessor (src/book/code_view.rs) writes each code view as a static page: every value
// beside the line that recorded it, which is what a reader without JavaScript gets. A view that
// can be stepped through also holds `<script type="application/json" class="lecture-steps-data">`:
// one entry per record call, in the order the section ran, `[slot, text]` or
// `[slot, text, full text]`, where `slot` is the `data-slot` of the element that shows the value.
// This script only ever sets text (`textContent`, text nodes, `title`): trace strings never become
// markup (the rules are in src/book/html.rs).
//
// Keys, while a view is in step mode: ← / → previous and next step, Home / End first and last,
// Escape leaves presenter mode, then step mode. `p` toggles presenter mode. With step mode off,
// ← / → stay mdBook's previous and next chapter. `?step=N` opens step N of the page's first code
// view, `?step=V.N` step N of code view V (both counted from 1); stepping keeps the URL current.
(function lectureSteps() {
    'use strict';

    const views = Array.from(document.querySelectorAll('.lecture-code'));
    const root = document.documentElement;
    let active = null;

    // Steps as the page carries them, or null when they are malformed (the view stays static).
    function readSteps(view) {
        const data = view.querySelector(':scope > script.lecture-steps-data');
        if (data === null) {
            return null;
        }
        let steps;
        try {
            steps = JSON.parse(data.textContent);
        } catch (e) {
            return null;
        }
        const ok = Array.isArray(steps) && steps.length > 0 && steps.every(s =>
            Array.isArray(s) && Number.isInteger(s[0]) && typeof s[1] === 'string' &&
            (s.length === 2 || (s.length === 3 && typeof s[2] === 'string')));
        return ok ? steps : null;
    }

    // The elements of the grid row a slot sits in (line number, code, values), or the slot itself
    // when it is below the code.
    function rowOf(slot) {
        const cell = slot.closest('.lecture-lv');
        if (!cell) {
            return { parts: [slot], code: slot, line: null };
        }
        const code = cell.previousElementSibling;
        const number = code && code.previousElementSibling;
        return { parts: [number, code, cell].filter(Boolean), code: code || slot, line: number ? number.textContent : null };
    }

    function button(text, label, onClick) {
        const b = document.createElement('button');
        b.type = 'button';
        b.className = 'lecture-steps-button';
        b.textContent = text;
        b.title = label;
        b.setAttribute('aria-label', label);
        b.addEventListener('click', onClick);
        return b;
    }

    function Stepper(view, number, steps) {
        this.view = view;
        this.number = number;
        this.steps = steps;
        this.current = 0;
        // The grid row of the current step (`rowOf`), null when none.
        this.row = null;
        this.slots = new Map();
        for (const el of view.querySelectorAll('[data-slot]')) {
            // What the static page shows, to put back when step mode ends.
            this.slots.set(Number(el.getAttribute('data-slot')), {
                el: el,
                nodes: Array.from(el.childNodes).map(n => n.cloneNode(true)),
                title: el.getAttribute('title'),
                // What decided the value, in words (`data-kind`), which every state's hover keeps.
                kind: el.getAttribute('data-kind'),
            });
        }
        this.buildBar();
    }

    Stepper.prototype.buildBar = function () {
        const bar = document.createElement('div');
        bar.className = 'lecture-steps-bar';
        const count = this.steps.length;
        this.toggle = button('Step through', 'Step through the code as it ran (' + count + ' steps)', () => {
            if (active === this) {
                this.leave();
            } else {
                this.enter(1, 'nearest');
            }
        });
        this.toggle.setAttribute('aria-pressed', 'false');
        this.controls = document.createElement('span');
        this.controls.className = 'lecture-steps-controls';
        this.controls.hidden = true;
        this.status = document.createElement('span');
        this.status.className = 'lecture-steps-status';
        this.status.setAttribute('aria-live', 'polite');
        this.controls.append(
            // Characters every font has (the media-control symbols are missing from many).
            button('« First', 'First step (Home)', () => this.show(1, 'nearest')),
            button('‹ Back', 'Previous step (←)', () => this.show(this.current - 1, 'nearest')),
            button('Next ›', 'Next step (→)', () => this.show(this.current + 1, 'nearest')),
            button('Last »', 'Last step (End)', () => this.show(count, 'nearest')),
            this.status,
        );
        const present = button('Present', 'Presenter mode (p; Escape leaves)', () => {
            if (active !== this) {
                this.enter(1, 'nearest');
            }
            setPresenting(!root.classList.contains('lecture-presenting'));
        });
        present.classList.add('lecture-present-button');
        bar.append(this.toggle, this.controls, present);
        const head = this.view.querySelector('.lecture-code-head');
        this.view.insertBefore(bar, head ? head.nextSibling : this.view.firstChild);
    };

    Stepper.prototype.enter = function (step, scroll) {
        if (active && active !== this) {
            active.leave();
        }
        active = this;
        this.view.classList.add('lecture-stepping');
        this.toggle.setAttribute('aria-pressed', 'true');
        this.toggle.textContent = 'Stop stepping';
        this.controls.hidden = false;
        this.show(step, scroll);
    };

    Stepper.prototype.leave = function () {
        this.clearCurrent();
        for (const slot of this.slots.values()) {
            slot.el.hidden = false;
            slot.el.replaceChildren(...slot.nodes.map(n => n.cloneNode(true)));
            setTitle(slot.el, slot.title);
        }
        this.view.classList.remove('lecture-stepping');
        this.toggle.setAttribute('aria-pressed', 'false');
        this.toggle.textContent = 'Step through';
        this.controls.hidden = true;
        this.current = 0;
        this.row = null;
        if (active === this) {
            active = null;
        }
        setUrlStep(null);
    };

    Stepper.prototype.clearCurrent = function () {
        for (const el of this.view.querySelectorAll('.lecture-step-current, .lecture-step-new')) {
            el.classList.remove('lecture-step-current', 'lecture-step-new');
        }
        for (const el of this.view.querySelectorAll('[aria-current]')) {
            el.removeAttribute('aria-current');
        }
    };

    // Shows step `step` (from 1): each slot shows the last state recorded there up to this step,
    // and is hidden when nothing was recorded there yet.
    Stepper.prototype.show = function (step, scroll) {
        const count = this.steps.length;
        step = Math.min(Math.max(step, 1), count);
        this.current = step;
        const shown = new Map();
        for (let i = 0; i < step; i++) {
            shown.set(this.steps[i][0], this.steps[i]);
        }
        for (const [id, slot] of this.slots) {
            const state = shown.get(id);
            slot.el.hidden = !state;
            if (state) {
                setSlotText(slot, state[1]);
                setTitle(slot.el, stateTitle(slot.kind, state.length === 3 ? state[2] : null));
            }
        }
        this.clearCurrent();
        const now = this.slots.get(this.steps[step - 1][0]);
        let where = 'below the code';
        let name = '';
        const row = now ? rowOf(now.el) : null;
        this.row = row;
        if (row) {
            for (const part of row.parts) {
                part.classList.add('lecture-step-current');
            }
            row.code.setAttribute('aria-current', 'step');
            now.el.classList.add('lecture-step-new');
            if (row.line !== null) {
                where = 'line ' + row.line;
            }
            const label = now.el.querySelector('.lecture-lv-name');
            name = label ? label.textContent : '';
        }
        // The status first: a longer one can wrap and move the lines below it.
        this.status.textContent = 'step ' + step + ' of ' + count + ' · ' + where + (name ? ' · ' + name : '');
        if (scroll) {
            this.reveal(scroll);
        }
        setUrlStep(this.number === 1 ? String(step) : this.number + '.' + step);
    };

    // The slot's value text after its name: `name = text`.
    function setSlotText(slot, text) {
        // A tensor drawn as a grid on the static page: its own state shows the grid again (the
        // page's nodes, not trace strings), the slot's other states show text.
        if (slot.el.getAttribute('data-grid-text') === text) {
            slot.el.replaceChildren(...slot.nodes.map(n => n.cloneNode(true)));
            return;
        }
        const name = slot.el.querySelector('.lecture-lv-name');
        const label = name ? [name.cloneNode(true)] : [];
        slot.el.replaceChildren(...label, document.createTextNode(' = ' + text));
    }

    // A state's hover, as the static page writes it: what decided the value, then its whole
    // text where the cell shortens it.
    function stateTitle(kind, full) {
        if (kind === null || kind === undefined) {
            return full;
        }
        return full === null ? kind : kind + ': ' + full;
    }

    function setTitle(el, title) {
        if (title === null || title === undefined) {
            el.removeAttribute('title');
        } else {
            el.setAttribute('title', title);
        }
    }

    // Scrolls the window, if the current step's row (line number, code, values) is not all in
    // it, to show the row below what sticks to the top of the window (mdBook's menu bar, or in
    // presenter mode the step bar): `how` is 'nearest' (the least scrolling) or 'center';
    // 'open' (a step opened from the URL) centers the row even when it is in the window, so the
    // lines after it show too.
    Stepper.prototype.reveal = function (how) {
        const parts = this.row ? this.row.parts : [this.view];
        const boxes = parts.map(el => el.getBoundingClientRect());
        const top = Math.min(...boxes.map(b => b.top));
        const bottom = Math.max(...boxes.map(b => b.bottom));
        const above = root.classList.contains('lecture-presenting')
            ? this.view.querySelector('.lecture-steps-bar')
            : document.getElementById('mdbook-menu-bar');
        const inset = above ? above.getBoundingClientRect().height : 0;
        const height = window.innerHeight;
        if (how !== 'open' && top >= inset && bottom <= height) {
            return;
        }
        let by;
        if (bottom - top > height - inset) {
            // Taller than the room: its top.
            by = top - inset;
        } else if (how === 'center' || how === 'open') {
            by = (top + bottom) / 2 - (inset + height) / 2;
        } else if (top < inset) {
            by = top - inset;
        } else {
            by = bottom - height;
        }
        window.scrollBy(0, by);
    };

    function setUrlStep(value) {
        let url;
        try {
            url = new URL(window.location.href);
        } catch (e) {
            return;
        }
        if (value === null) {
            url.searchParams.delete('step');
        } else {
            url.searchParams.set('step', value);
        }
        if (url.href !== window.location.href) {
            try {
                history.replaceState(history.state, '', url.href);
            } catch (e) {
                // Some browsers refuse to change a file:// URL; stepping works without it.
            }
        }
    }

    // Entering or leaving presenter mode reflows the page at once (no sliding sidebar: mdBook's
    // transition would move the lines after the current one was scrolled into view), and keeps
    // the current step in view.
    function setPresenting(on) {
        root.classList.add('lecture-switching');
        root.classList.toggle('lecture-presenting', on);
        for (const b of document.querySelectorAll('.lecture-present-button')) {
            b.setAttribute('aria-pressed', on ? 'true' : 'false');
            b.textContent = on ? 'Stop presenting' : 'Present';
        }
        if (active) {
            active.reveal('center');
        }
        requestAnimationFrame(() => root.classList.remove('lecture-switching'));
    }

    // The code view closest to the top of the window, for `p` when no view is being stepped.
    function nearestStepper(steppers) {
        let best = null;
        let distance = Infinity;
        for (const s of steppers) {
            const d = Math.abs(s.view.getBoundingClientRect().top);
            if (d < distance) {
                best = s;
                distance = d;
            }
        }
        return best;
    }

    const steppers = [];
    views.forEach((view, i) => {
        const steps = readSteps(view);
        if (steps) {
            steppers.push(new Stepper(view, i + 1, steps));
        }
    });
    if (steppers.length === 0) {
        return;
    }

    function typing(e) {
        const target = (e.composedPath && e.composedPath()[0]) || e.target;
        if (!(target instanceof Element)) {
            return false;
        }
        return /^(?:input|select|textarea)$/i.test(target.nodeName) || target.isContentEditable ||
            target.closest('#mdbook-theme-list') !== null;
    }

    function helpOpen() {
        const help = document.getElementById('mdbook-help-container');
        return help !== null && help.style.display === 'flex';
    }

    // Capture on window runs before mdBook's handlers on document: a key step mode uses stops
    // there, so mdBook does not also turn the page. Keys step mode does not use pass through.
    window.addEventListener('keydown', function (e) {
        if (e.altKey || e.ctrlKey || e.metaKey || typing(e) || helpOpen()) {
            return;
        }
        let handled = true;
        if (e.key === 'Escape') {
            if (root.classList.contains('lecture-presenting')) {
                setPresenting(false);
            } else if (active) {
                active.leave();
            } else {
                handled = false;
            }
        } else if (e.shiftKey) {
            handled = false;
        } else if (e.key === 'p') {
            if (!active) {
                nearestStepper(steppers).enter(1, 'nearest');
            }
            setPresenting(!root.classList.contains('lecture-presenting'));
        } else if (!active) {
            handled = false;
        } else if (e.key === 'ArrowRight') {
            active.show(active.current + 1, 'nearest');
        } else if (e.key === 'ArrowLeft') {
            active.show(active.current - 1, 'nearest');
        } else if (e.key === 'Home') {
            active.show(1, 'nearest');
        } else if (e.key === 'End') {
            active.show(active.steps.length, 'nearest');
        } else {
            handled = false;
        }
        if (handled) {
            e.preventDefault();
            e.stopPropagation();
        }
    }, true);

    // `?step=N` or `?step=V.N`.
    const asked = new URLSearchParams(window.location.search).get('step');
    const match = asked && /^(?:(\d+)\.)?(\d+)$/.exec(asked);
    if (match) {
        const number = match[1] ? Number(match[1]) : 1;
        const stepper = steppers.find(s => s.number === number);
        if (stepper) {
            stepper.enter(Number(match[2]), 'open');
            // Fonts and images that arrive later move the lines: once they are in, bring the step
            // back into view, unless the reader has stepped or left step mode since.
            const opened = stepper.current;
            const settle = () => {
                if (active === stepper && stepper.current === opened) {
                    stepper.reveal('open');
                }
            };
            if (document.fonts) {
                document.fonts.ready.then(settle);
            }
            if (document.readyState === 'complete') {
                settle();
            } else {
                window.addEventListener('load', settle, { once: true });
            }
        }
    }
})();
