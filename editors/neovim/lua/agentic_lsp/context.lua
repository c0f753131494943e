--- Editor context of a run: the buffer's document, the selection (or cursor) and the diagnostics
--- there, as `agentic.runWorkflow` takes them (docs/lsp.md, "Editor context of a run").
---
--- The client never sends code: the server reads the document (the buffer Neovim synced to it).
--- Positions are LSP positions, 0-based, in the client's offset encoding.
local M = {}

--- The byte column `col` of line `row` (both 0-based) as an LSP position.
local function position(bufnr, row, col, encoding)
  return { line = row, character = vim.lsp.util.character_offset(bufnr, row, col, encoding) }
end

local function line_length(bufnr, row)
  return #(vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or '')
end

--- The selection of lines `first`..`last` (1-based, inclusive). A charwise visual selection of
--- exactly those lines keeps its columns; any other range covers whole lines, ending at the
--- start of the next line (the end of the last line at the end of the buffer).
local function selection(bufnr, first, last, encoding)
  local from, to = vim.api.nvim_buf_get_mark(bufnr, '<'), vim.api.nvim_buf_get_mark(bufnr, '>')
  local charwise = vim.fn.visualmode() == 'v' and from[1] == first and to[1] == last
  if charwise and bufnr == vim.api.nvim_get_current_buf() then
    local text = vim.api.nvim_buf_get_lines(bufnr, last - 1, last, false)[1] or ''
    -- '> is the first byte of the last selected character: end after the whole character
    local stop = math.min(#text, to[2] + #vim.fn.strcharpart(text:sub(to[2] + 1), 0, 1))
    return {
      start = position(bufnr, first - 1, from[2], encoding),
      ['end'] = position(bufnr, last - 1, stop, encoding),
    }
  end
  local stop
  if last < vim.api.nvim_buf_line_count(bufnr) then
    stop = { line = last, character = 0 }
  else
    stop = position(bufnr, last - 1, line_length(bufnr, last - 1), encoding)
  end
  return { start = { line = first - 1, character = 0 }, ['end'] = stop }
end

--- A `vim.diagnostic` entry as an LSP Diagnostic (range, message, severity, source, code).
function M.lsp_diagnostic(bufnr, d, encoding)
  local end_row = d.end_lnum or d.lnum
  return {
    range = {
      start = position(bufnr, d.lnum, d.col or 0, encoding),
      ['end'] = position(bufnr, end_row, d.end_col or d.col or 0, encoding),
    },
    message = tostring(d.message or ''),
    severity = d.severity,
    source = type(d.source) == 'string' and d.source or nil,
    code = (type(d.code) == 'string' or type(d.code) == 'number') and d.code or nil,
  }
end

--- Diagnostics of `bufnr` touching lines `first`..`last` (0-based, inclusive), most severe first,
--- then by position. The plugin's own pending-change hints (source `agentic`) are left out.
function M.diagnostics(bufnr, first, last)
  local found = vim.tbl_filter(function(d)
    return d.source ~= 'agentic' and d.lnum <= last and (d.end_lnum or d.lnum) >= first
  end, vim.diagnostic.get(bufnr))
  table.sort(found, function(a, b)
    local sa, sb = a.severity or 5, b.severity or 5
    if sa ~= sb then
      return sa < sb
    end
    if a.lnum ~= b.lnum then
      return a.lnum < b.lnum
    end
    return (a.col or 0) < (b.col or 0)
  end)
  return found
end

---@class agentic_lsp.ContextOpts
---@field bufnr? integer default: the current buffer
---@field range? integer[] {line1, line2}: 1-based lines of a command range; nil: the cursor
---@field encoding? string the client's offset encoding (default 'utf-16')

--- The `context` argument of agentic.runWorkflow for a buffer and a range or the cursor, and
--- the vim.diagnostic entries it carries. nil and why when the buffer is not a file.
---@param opts? agentic_lsp.ContextOpts
---@return table? context, table[]? diagnostics, string? err
function M.build(opts)
  opts = opts or {}
  local bufnr = opts.bufnr or vim.api.nvim_get_current_buf()
  if bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == '' or vim.bo[bufnr].buftype ~= '' then
    return nil, nil, 'this buffer is not a file of the project: open one to give a run editor context'
  end
  local encoding = opts.encoding or 'utf-16'
  local context = { uri = vim.uri_from_bufnr(bufnr) }
  local first, last
  if opts.range then
    first, last = opts.range[1], opts.range[2]
    if first > last then
      first, last = last, first
    end
    context.selection = selection(bufnr, first, last, encoding)
    first, last = first - 1, last - 1
  else
    local win = vim.fn.bufwinid(bufnr)
    local cursor = vim.api.nvim_win_get_cursor(win ~= -1 and win or 0)
    first, last = cursor[1] - 1, cursor[1] - 1
    context.cursor = position(bufnr, first, cursor[2], encoding)
  end
  local found = M.diagnostics(bufnr, first, last)
  if #found > 0 then
    context.diagnostics = vim.tbl_map(function(d)
      return M.lsp_diagnostic(bufnr, d, encoding)
    end, found)
  end
  return context, found, nil
end

local TASKS = {
  fix = { selection = 'Fix the selected code', cursor = 'Fix the code at the cursor' },
  explain = { selection = 'Explain the selected code', cursor = 'Explain the code at the cursor' },
}

--- The default task of `kind` ('fix' | 'explain'): a fix names the first diagnostic's message
--- ("Fix: <message>", its first line), else the selected code or the code at the cursor.
---@param diagnostics table[] vim.diagnostic entries (most severe first)
function M.task(kind, has_range, diagnostics)
  local first = diagnostics and diagnostics[1]
  if kind == 'fix' and first and vim.trim(first.message or '') ~= '' then
    return 'Fix: ' .. vim.split(vim.trim(first.message), '\n', { plain = true })[1]
  end
  return TASKS[kind][has_range and 'selection' or 'cursor']
end

return M
