// The "What if?" box under a code view: as the reader edits a given, the command that runs the
// section with those values is rewritten. The page runs nothing; it only writes the command line.
(function () {
    'use strict';
    const base = 'cargo run --release --bin lecture --';
    function update(box) {
        const sets = [];
        for (const input of box.querySelectorAll('.lecture-what-if-input')) {
            const value = input.value.trim();
            if (value !== '' && value !== input.getAttribute('data-run')) {
                sets.push(' --set ' + input.getAttribute('data-key') + '=' + value.replace(/[^0-9A-Za-z_.+-]/g, ''));
            }
        }
        const code = box.querySelector('.lecture-what-if-command code');
        if (code) {
            code.textContent = sets.length ? base + sets.join('') : base + ' --set SECTION.NAME=VALUE   (edit a value above)';
        }
    }
    for (const box of document.querySelectorAll('.lecture-what-if')) {
        for (const input of box.querySelectorAll('.lecture-what-if-input')) {
            input.addEventListener('input', () => update(box));
        }
        update(box);
    }
})();
