--- :AgenticSearch — the index's hybrid search, shown in a picker or the quickfix list.
local client = require('agentic_lsp.client')
local config = require('agentic_lsp.config')
local events = require('agentic_lsp.events')

local M = {}

--- Search results as quickfix items (1-based lines).
function M.items(result)
  local items = {}
  for _, hit in ipairs(result.results or {}) do
    local label = hit.signature ~= nil and hit.signature ~= vim.NIL and hit.signature ~= '' and hit.signature
      or (hit.symbol ~= vim.NIL and hit.symbol)
      or hit.path
    table.insert(items, {
      filename = vim.uri_to_fname(hit.uri),
      lnum = hit.range.start.line + 1,
      end_lnum = math.max(hit.range['end'].line, hit.range.start.line + 1),
      col = 1,
      text = ('[%s] %s  (%.3f)'):format(hit.kind, label, hit.score or 0),
      user_data = hit,
    })
  end
  return items
end

local pickers = {}

function pickers.quickfix(items, title)
  vim.fn.setqflist({}, ' ', { title = title, items = items })
  vim.cmd('botright copen')
end

function pickers.telescope(items, title)
  local finders = require('telescope.finders')
  local conf = require('telescope.config').values
  require('telescope.pickers')
    .new({}, {
      prompt_title = title,
      finder = finders.new_table({
        results = items,
        entry_maker = function(item)
          local rel = vim.fn.fnamemodify(item.filename, ':.')
          return {
            value = item,
            display = ('%s:%d %s'):format(rel, item.lnum, item.text),
            ordinal = rel .. ' ' .. item.text,
            filename = item.filename,
            lnum = item.lnum,
            col = 1,
          }
        end,
      }),
      sorter = conf.generic_sorter({}),
      previewer = conf.grep_previewer({}),
    })
    :find()
end

function pickers.snacks(items, title)
  local entries = {}
  for _, item in ipairs(items) do
    table.insert(entries, {
      text = vim.fn.fnamemodify(item.filename, ':.') .. ' ' .. item.text,
      file = item.filename,
      pos = { item.lnum, 0 },
    })
  end
  require('snacks').picker.pick({ title = title, items = entries, format = 'file' })
end

pickers['fzf-lua'] = function(items, title)
  local fzf = require('fzf-lua')
  local lines = {}
  for _, item in ipairs(items) do
    table.insert(lines, ('%s:%d:1: %s'):format(vim.fn.fnamemodify(item.filename, ':.'), item.lnum, item.text))
  end
  local actions = { default = require('fzf-lua.actions').file_edit }
  fzf.fzf_exec(lines, { prompt = title .. '> ', previewer = 'builtin', actions = actions })
end

local AUTO = { { 'telescope', 'telescope' }, { 'snacks', 'snacks' }, { 'fzf-lua', 'fzf-lua' } }

--- The picker to use: the configured one, or the first installed of telescope, snacks, fzf-lua.
function M.picker_name()
  local wanted = config.options.picker
  if wanted ~= 'auto' then
    return wanted
  end
  for _, entry in ipairs(AUTO) do
    if package.loaded[entry[2]] or pcall(require, entry[2]) then
      return entry[1]
    end
  end
  return 'quickfix'
end

--- Search `query`; results go to the picker (or `opts.on_results(items, result)` instead).
---@param opts? {limit?: integer, on_results?: fun(items: table[], result: table)}
function M.search(query, opts)
  opts = opts or {}
  local c = client.get()
  local arg = { query = query, limit = opts.limit or config.options.search_limit }
  arg.root = c and client.folder_of(c) or nil
  client.execute('search', arg, function(err, result)
    if err then
      events.notify('agentic-lsp: ' .. err, vim.log.levels.ERROR)
      return
    end
    local items = M.items(result)
    if opts.on_results then
      return opts.on_results(items, result)
    end
    if #items == 0 then
      events.notify(('agentic-lsp: nothing found for "%s"'):format(query), vim.log.levels.WARN)
      return
    end
    local title = 'agentic-lsp search: ' .. query
    local name = M.picker_name()
    local ok, failure = pcall(pickers[name] or pickers.quickfix, items, title)
    if not ok then
      events.notify(
        ('agentic-lsp: %s picker failed (%s); results are in the quickfix list'):format(name, failure),
        vim.log.levels.WARN
      )
      pickers.quickfix(items, title)
    end
  end, c)
end

return M
